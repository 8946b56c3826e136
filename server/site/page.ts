/**
 * A public page of this server as a whole HTML document (the docs, and the pages for people
 * who have not signed in): server-rendered, readable without JavaScript, styled by
 * /site.css (the pages' Content-Security-Policy allows only the server's own styles), with
 * its title, description and canonical/OpenGraph tags from the server's public origin.
 */
export interface SitePage {
  origin: string;
  /** The page's path, for its canonical address: `/docs/security`. */
  path: string;
  title: string;
  description: string;
  /** The page's content: trusted HTML (rendered from our own Markdown, escaped elsewhere). */
  body: string;
  /** Its Markdown twin's path, when it has one. */
  markdownPath?: string;
}

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);

export function sitePage(page: SitePage): string {
  const url = `${page.origin}${page.path}`;
  const title = escapeHtml(page.title);
  const description = escapeHtml(page.description);
  const twin = page.markdownPath ? `<link rel="alternate" type="text/markdown" href="${escapeHtml(page.markdownPath)}">` : "";
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<meta name="description" content="${description}">
<link rel="canonical" href="${escapeHtml(url)}">
<meta property="og:title" content="${title}">
<meta property="og:description" content="${description}">
<meta property="og:url" content="${escapeHtml(url)}">
<meta property="og:type" content="website">
${twin}
<link rel="stylesheet" href="/site.css">
</head>
<body>
<header><nav aria-label="Site"><a href="/">Retasc</a> · <a href="/product">Product</a> · <a href="/guides">Guides</a> · <a href="/docs">Docs</a> · <a href="/wire">Wire an agent</a> · <a href="/pricing">Pricing</a> · <a href="/index.md">For agents</a>${
    page.markdownPath ? ` · <a href="${escapeHtml(page.markdownPath)}">This page as Markdown</a>` : ""
  }</nav></header>
<main>
${page.body}
</main>
</body>
</html>
`;
}

export { escapeHtml };
