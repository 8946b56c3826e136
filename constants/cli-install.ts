/**
 * The commands a person runs to get the CLI from a Retasc server (its /cli/latest serves the
 * packed tarball, with its dependencies bundled).
 */
export const cliInstallCommand = (origin: string) => `npm install -g ${origin}/cli/latest`;
