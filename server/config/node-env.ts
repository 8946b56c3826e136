/**
 * React and React Router choose their development or production builds from NODE_ENV the
 * first time they are imported, and mixing the two fails at render time. Imported first by
 * the Node entry, this makes production the default before anything else loads.
 */
process.env.NODE_ENV ??= "production";
