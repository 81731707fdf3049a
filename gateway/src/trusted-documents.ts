import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { ApolloServerPlugin } from '@apollo/server';
import { getOperationAST, parse } from 'graphql';
import { ConfigError, type Config } from '../../platform/config.js';
import { appError, ErrorCode } from '../../platform/errors.js';
import { loadOperation } from '../../rest-adapter/src/operations.js';
import { ROUTES } from '../../rest-adapter/src/routes/index.js';
import { DASHBOARD_DOCUMENTS } from '../../web/operations.js';

/** One registered operation, as an entry of Apollo's persisted query manifest. */
export interface TrustedDocument {
  /** The SHA-256 of `body` in hex: the `sha256Hash` a client sends in `extensions.persistedQuery`. */
  id: string;
  name: string | null;
  type: 'query' | 'mutation' | 'subscription';
  body: string;
}

/** Apollo's persisted query manifest format (what `npm run contract` writes, what TRUSTED_DOCUMENTS_FILE reads). */
export interface PersistedQueryManifest {
  format: 'apollo-persisted-query-manifest';
  version: 1;
  operations: TrustedDocument[];
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

function documentOf(body: string): TrustedDocument {
  const operation = getOperationAST(parse(body));
  if (!operation) throw new Error(`A trusted document must hold exactly one operation: ${body.slice(0, 80)}`);
  return { id: sha256(body), name: operation.name?.value ?? null, type: operation.operation, body };
}

/** The project's own documents: every operation of the REST adapter's routes and every document of the dashboard. */
export function builtInTrustedDocuments(): TrustedDocument[] {
  const bodies = new Set([...ROUTES.map((route) => loadOperation(route.operation)), ...Object.values(DASHBOARD_DOCUMENTS)]);
  return [...bodies].map(documentOf);
}

/** The manifest of `documents`, for clients and for other deployments. */
export function persistedQueryManifest(documents: TrustedDocument[]): PersistedQueryManifest {
  return { format: 'apollo-persisted-query-manifest', version: 1, operations: documents };
}

/** Reads a manifest file; every entry's id must be the SHA-256 of its body (a start-up check). */
export function readManifest(file: string): TrustedDocument[] {
  let manifest: Partial<PersistedQueryManifest>;
  try {
    manifest = JSON.parse(readFileSync(file, 'utf8')) as Partial<PersistedQueryManifest>;
  } catch (error) {
    throw new ConfigError([`TRUSTED_DOCUMENTS_FILE ${file} cannot be read as JSON: ${(error as Error).message}`]);
  }
  if (manifest.format !== 'apollo-persisted-query-manifest' || manifest.version !== 1 || !Array.isArray(manifest.operations)) {
    throw new ConfigError([`TRUSTED_DOCUMENTS_FILE ${file} is not an apollo-persisted-query-manifest of version 1`]);
  }
  const wrong = manifest.operations.filter((entry) => typeof entry?.body !== 'string' || entry.id !== sha256(entry.body));
  if (wrong.length > 0) throw new ConfigError([`TRUSTED_DOCUMENTS_FILE ${file}: ${wrong.length} entries whose id is not the SHA-256 of their body`]);
  return manifest.operations;
}

/** Every trusted document of this deployment, by id: the built-in ones and the configured file's. */
export function trustedDocumentsOf(config: Pick<Config, 'trustedDocumentsFile'>): ReadonlyMap<string, string> {
  const documents = [...builtInTrustedDocuments(), ...(config.trustedDocumentsFile ? readManifest(config.trustedDocumentsFile) : [])];
  return new Map(documents.map((document) => [document.id, document.body]));
}

const APQ_PREFIX = 'apq:';
const MAX_REGISTERED = 1000;

/**
 * The cache Apollo Server looks persisted queries up in. Trusted documents are always there, so
 * a client may send a registered operation by its hash alone. In `off` mode clients may register
 * further documents the APQ way (bounded, oldest first out); in `require` mode nothing is
 * registered at run time: the list is what the deployment shipped with.
 */
export function persistedQueryCache(trusted: ReadonlyMap<string, string>, mode: Config['trustedDocuments']) {
  const registered = new Map<string, string>();
  const hashOf = (key: string) => (key.startsWith(APQ_PREFIX) ? key.slice(APQ_PREFIX.length) : key);
  return {
    async get(key: string): Promise<string | undefined> {
      const hash = hashOf(key);
      return trusted.get(hash) ?? registered.get(hash);
    },
    async set(key: string, value: string): Promise<void> {
      if (mode === 'require' || trusted.has(hashOf(key))) return;
      registered.delete(hashOf(key));
      registered.set(hashOf(key), value);
      if (registered.size > MAX_REGISTERED) registered.delete(registered.keys().next().value!);
    },
    async delete(key: string): Promise<boolean> {
      return registered.delete(hashOf(key));
    },
  };
}

/**
 * In `require` mode, refuses any operation that is not a trusted document, before it runs:
 * OPERATION_NOT_TRUSTED (HTTP 400). Internal services (subgraphs calling the graph) and the
 * gateway's own resolution of subscription events (no HTTP request) are not clients and run as
 * they are.
 */
export function trustedDocumentsPlugin(trusted: ReadonlyMap<string, string>, mode: Config['trustedDocuments']): ApolloServerPlugin<{ principal?: { kind: string } }> {
  return {
    async requestDidStart({ request, contextValue }) {
      if (mode === 'off' || !request.http || contextValue.principal?.kind === 'service') return;
      return {
        // Apollo answers a refusal thrown here with a clean error (from didResolveSource it would be a 500).
        async didResolveOperation({ queryHash }) {
          if (!trusted.has(queryHash)) {
            throw appError(ErrorCode.OPERATION_NOT_TRUSTED, 'This deployment runs registered operations only (trusted documents), and this operation is not one of them.', { httpStatus: 400 });
          }
        },
      };
    },
  };
}

/** The same rule for a subscription over WebSocket: the hash of its text must be trusted. */
export function isTrustedSubscription(trusted: ReadonlyMap<string, string>, mode: Config['trustedDocuments'], query: string): boolean {
  return mode === 'off' || trusted.has(sha256(query));
}
