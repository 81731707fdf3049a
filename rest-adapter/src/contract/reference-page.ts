import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { ownValue } from '../../../platform/contracts/own.js';

const SWAGGER_UI_DIR = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

/** The files of the reference page, all served from this adapter: nothing comes from a CDN. */
const ASSETS: Record<string, { file: string; type: string }> = {
  'swagger-ui.css': { file: path.join(SWAGGER_UI_DIR, 'swagger-ui.css'), type: 'text/css; charset=utf-8' },
  'swagger-ui-bundle.js': { file: path.join(SWAGGER_UI_DIR, 'swagger-ui-bundle.js'), type: 'text/javascript; charset=utf-8' },
  'favicon-32x32.png': { file: path.join(SWAGGER_UI_DIR, 'favicon-32x32.png'), type: 'image/png' },
};

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Banking graph REST API reference</title>
<link rel="stylesheet" href="/docs/swagger-ui.css">
<link rel="icon" type="image/png" href="/docs/favicon-32x32.png">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
`;

// No validator badge (it would call validator.swagger.io), no external fetches.
const INIT = `window.ui = SwaggerUIBundle({
  url: '/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  docExpansion: 'list',
  validatorUrl: null,
  defaultModelsExpandDepth: 0,
  displayOperationId: false,
});
`;

/** Headers of the reference page: scripts and styles only from this origin (Swagger UI sets inline styles). */
export const REFERENCE_PAGE_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

const loaded = new Map<string, Promise<Buffer>>();

/** The reference page's file at `/docs/<name>` (`''` is the page), or null; each asset is read from disk once. */
export async function referencePageFile(name: string): Promise<{ body: string | Buffer; type: string } | null> {
  if (name === '') return { body: PAGE, type: 'text/html; charset=utf-8' };
  if (name === 'init.js') return { body: INIT, type: 'text/javascript; charset=utf-8' };
  const asset = ownValue(ASSETS, name);
  if (!asset) return null;
  let body = loaded.get(name);
  if (!body) {
    body = readFile(asset.file);
    loaded.set(name, body);
  }
  return { body: await body, type: asset.type };
}
