// Apollo's persisted query manifest: the format of trusted documents, shared by whoever writes one (npm run trusted-documents) and the gateway that reads it.
import { readFileSync } from 'node:fs';
import { getOperationAST, parse } from 'graphql';
import { ConfigError } from '../runtime/config.js';
import { sha256 } from '../security/secrets.js';

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

/** The manifest entry of one operation's document. */
export function trustedDocumentOf(body: string): TrustedDocument {
  const operation = getOperationAST(parse(body));
  if (!operation) throw new Error(`A trusted document must hold exactly one operation: ${body.slice(0, 80)}`);
  return { id: sha256(body), name: operation.name?.value ?? null, type: operation.operation, body };
}

/** The manifest of `documents`, for clients and for other deployments. */
export function persistedQueryManifest(documents: TrustedDocument[]): PersistedQueryManifest {
  return { format: 'apollo-persisted-query-manifest', version: 1, operations: documents };
}

/** Reads a manifest file (`name` says which, in errors); every entry's id must be the SHA-256 of its body (a start-up check). */
export function readManifest(file: string, name = 'TRUSTED_DOCUMENTS_FILE'): TrustedDocument[] {
  let manifest: Partial<PersistedQueryManifest>;
  try {
    manifest = JSON.parse(readFileSync(file, 'utf8')) as Partial<PersistedQueryManifest>;
  } catch (error) {
    throw new ConfigError([`${name} ${file} cannot be read as JSON: ${(error as Error).message}`]);
  }
  if (manifest.format !== 'apollo-persisted-query-manifest' || manifest.version !== 1 || !Array.isArray(manifest.operations)) {
    throw new ConfigError([`${name} ${file} is not an apollo-persisted-query-manifest of version 1`]);
  }
  // Typed as what a file may hold: a null entry is a wrong one, not a TypeError.
  const wrong = manifest.operations.filter(
    (entry: TrustedDocument | null) => typeof entry?.body !== 'string' || entry.id !== sha256(entry.body),
  );
  if (wrong.length > 0) throw new ConfigError([`${name} ${file}: ${wrong.length} entries whose id is not the SHA-256 of their body`]);
  return manifest.operations;
}
