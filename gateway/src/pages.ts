import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import { build } from 'esbuild';
import { REPO_ROOT } from '../../platform/runtime/config.js';

const WEB = path.join(REPO_ROOT, 'web');

/** A page's files as served: built once per process, on first request, from local sources and npm packages (no CDN). */
interface Bundle {
  html: string;
  files: Map<string, { type: string; body: Buffer }>;
}

const bundles = new Map<string, Promise<Bundle>>();

async function bundle(name: 'dashboard' | 'graphiql'): Promise<Bundle> {
  const result = await build({
    entryPoints: [path.join(WEB, name === 'dashboard' ? 'dashboard.ts' : 'graphiql.tsx')],
    bundle: true,
    write: false,
    minify: true,
    format: 'iife',
    platform: 'browser',
    target: 'es2020',
    outdir: path.join(WEB, 'dist', name),
    entryNames: 'app',
    loader: { '.woff': 'dataurl', '.woff2': 'dataurl', '.svg': 'dataurl' },
    define: { 'process.env.NODE_ENV': '"production"' },
    logLevel: 'silent',
  });
  const files = new Map<string, { type: string; body: Buffer }>();
  for (const file of result.outputFiles) {
    const base = path.basename(file.path);
    files.set(base, {
      type: base.endsWith('.css') ? 'text/css; charset=utf-8' : 'text/javascript; charset=utf-8',
      body: Buffer.from(file.contents),
    });
  }
  const html =
    name === 'dashboard'
      ? await readFile(path.join(WEB, 'dashboard.html'), 'utf8')
      : '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>GraphQL IDE · banking graph</title><link rel="stylesheet" href="/graphiql/app.css"><style>html,body,#graphiql{height:100%;margin:0}</style></head><body><div id="graphiql"></div><script src="/graphiql/app.js"></script></body></html>';
  return { html, files };
}

function send(res: ServerResponse, type: string, body: string | Buffer): void {
  res.writeHead(200, {
    'content-type': type,
    'content-length': Buffer.byteLength(body),
    // Only this gateway's own scripts, styles and sockets.
    // 'self' covers the gateway's own ws:/wss: origin (CSP level 3).
    'content-security-policy':
      "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; base-uri 'none'; frame-ancestors 'none'",
    'x-content-type-options': 'nosniff',
    'cache-control': 'no-cache',
  });
  res.end(body);
}

/**
 * Serves the live dashboard at `/dashboard` and, when `ide` is on (development), GraphiQL at
 * `/graphiql`. Returns false for any other path.
 */
export async function servePage(req: IncomingMessage, res: ServerResponse, options: { ide: boolean }): Promise<boolean> {
  if (req.method !== 'GET' && req.method !== 'HEAD') return false;
  const { pathname } = new URL(req.url ?? '/', 'http://gateway');
  const match = /^\/(dashboard|graphiql)(?:\/([\w.-]+))?\/?$/.exec(pathname);
  if (!match || (match[1] === 'graphiql' && !options.ide)) return false;
  const name = match[1] as 'dashboard' | 'graphiql';
  let pending = bundles.get(name);
  if (!pending) {
    pending = bundle(name);
    bundles.set(name, pending);
    // A failed build is retried after a minute, not on every request.
    pending.catch(() => setTimeout(() => bundles.delete(name), 60_000).unref());
  }
  const built = await pending;
  if (!match[2]) {
    send(res, 'text/html; charset=utf-8', built.html);
    return true;
  }
  const file = built.files.get(match[2]);
  if (!file) return false;
  send(res, file.type, file.body);
  return true;
}
