import path from 'node:path';
import { REPO_ROOT, type Config } from '../../platform/runtime/config.js';
import type { GraphQLError } from 'graphql';
import { appError, ErrorCode } from '../../platform/contracts/errors.js';
import { readManifest } from '../../platform/graphql/persisted-queries.js';
import { sha256 } from '../../platform/security/secrets.js';

/**
 * The project's own documents (every operation of the REST adapter's routes and every document of
 * the dashboard), as `npm run trusted-documents` writes them: the gateway reads the file, not the
 * adapter's code.
 */
export const BUILT_IN_TRUSTED_DOCUMENTS = path.join(REPO_ROOT, 'schema', 'trusted-documents.json');

/** Every trusted document of this deployment, by id: the built-in ones and the configured file's. */
export function trustedDocumentsOf(config: Pick<Config, 'trustedDocumentsFile'>): ReadonlyMap<string, string> {
  const documents = [
    ...readManifest(BUILT_IN_TRUSTED_DOCUMENTS, 'The built-in trusted documents'),
    ...(config.trustedDocumentsFile ? readManifest(config.trustedDocumentsFile) : []),
  ];
  return new Map(documents.map((document) => [document.id, document.body]));
}

/** Bounds of the documents clients register the APQ way (`off` mode): real operations are small. */
const MAX_REGISTERED_DOCUMENT_BYTES = 64 * 1024;
const MAX_REGISTERED_BYTES = 16 * 1024 * 1024;

/**
 * Where the operation pipeline looks persisted queries up. Trusted documents are always there, so
 * a client may send a registered operation by its hash alone. In `off` mode clients may register
 * further documents the APQ way (bounded, oldest first out); in `require` mode nothing is
 * registered at run time: the list is what the deployment shipped with.
 */
export function persistedQueryCache(trusted: ReadonlyMap<string, string>, mode: Config['trustedDocuments']) {
  const registered = new Map<string, string>();
  let registeredBytes = 0;
  const forget = (hash: string) => {
    const text = registered.get(hash);
    if (text === undefined) return false;
    registered.delete(hash);
    registeredBytes -= text.length;
    return true;
  };
  return {
    async get(hash: string): Promise<string | undefined> {
      return trusted.get(hash) ?? registered.get(hash);
    },
    async set(hash: string, value: string): Promise<void> {
      // A document too large to be a real operation is served this once, not kept.
      if (mode === 'require' || trusted.has(hash) || value.length > MAX_REGISTERED_DOCUMENT_BYTES) return;
      forget(hash);
      registered.set(hash, value);
      registeredBytes += value.length;
      for (const oldest of registered.keys()) {
        if (registeredBytes <= MAX_REGISTERED_BYTES) break;
        forget(oldest);
      }
    },
  };
}

/**
 * The operation a GraphQL HTTP request names, as sent, before the pipeline reads it: its text
 * (`query`, in the body or the query string) and the hash it sends instead or beside
 * (`extensions.persistedQuery.sha256Hash`), and the operation name it gives (`operationName`, unchecked).
 */
export function operationOf(request: { body: unknown; search: string }): { text: string | null; hash: string | null; name: unknown } {
  let query: unknown;
  let extensions: unknown;
  let name: unknown;
  if (request.body !== null && typeof request.body === 'object' && !Array.isArray(request.body)) {
    ({ query, extensions, operationName: name } = request.body as { query?: unknown; extensions?: unknown; operationName?: unknown });
  } else if (request.body === undefined) {
    const params = new URLSearchParams(request.search);
    query = params.get('query') ?? undefined;
    name = params.get('operationName') ?? undefined;
    try {
      extensions = JSON.parse(params.get('extensions') ?? 'null');
    } catch {
      extensions = null;
    }
  }
  const hash = (extensions as { persistedQuery?: { sha256Hash?: unknown } } | null)?.persistedQuery?.sha256Hash;
  return { text: typeof query === 'string' && query !== '' ? query : null, hash: typeof hash === 'string' ? hash : null, name };
}

/**
 * Refuses a request that sends both a text and a persisted-query hash that is not the text's
 * SHA-256, with 400 PERSISTED_QUERY_HASH_MISMATCH: a client's mistake, answered as such. The
 * pipeline's own refusal (Apollo Server's) has no code, which the gateway would answer as an internal error.
 */
export function checkPersistedQueryHash(operation: { text: string | null; hash: string | null }): void {
  if (operation.text === null || operation.hash === null) return;
  if (sha256(operation.text) !== operation.hash) {
    throw appError(
      ErrorCode.PERSISTED_QUERY_HASH_MISMATCH,
      'provided sha does not match query: extensions.persistedQuery.sha256Hash must be the SHA-256 of the query text (hex).',
      { field: 'extensions.persistedQuery.sha256Hash', httpStatus: 400 },
    );
  }
}

/**
 * In `require` mode, the refusal of an HTTP request whose operation is not a trusted document (by
 * its text's SHA-256, or the hash it sends instead of a text): OPERATION_NOT_TRUSTED (HTTP 400),
 * made before it is parsed or validated, so that an untrusted document costs nothing and
 * learns nothing of the schema. Null for a trusted one, and for a request without either (the
 * pipeline refuses it).
 */
export function untrustedRequestError(
  trusted: ReadonlyMap<string, string>,
  mode: Config['trustedDocuments'],
  operation: { text: string | null; hash: string | null },
): GraphQLError | null {
  if (mode === 'off') return null;
  const id = operation.text !== null ? sha256(operation.text) : operation.hash;
  if (id === null || trusted.has(id)) return null;
  return appError(
    ErrorCode.OPERATION_NOT_TRUSTED,
    'This deployment runs registered operations only (trusted documents), and this operation is not one of them.',
    { httpStatus: 400 },
  );
}

/** The same rule for a subscription over WebSocket: the hash of its text must be trusted. */
export function isTrustedSubscription(trusted: ReadonlyMap<string, string>, mode: Config['trustedDocuments'], query: string): boolean {
  return mode === 'off' || trusted.has(sha256(query));
}
