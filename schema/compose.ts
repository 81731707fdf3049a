import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { composeServices } from '@apollo/composition';
import { lexicographicSortSchema, parse, printSchema } from 'graphql';

const SCHEMA_DIR = path.dirname(fileURLToPath(import.meta.url));
/** The committed supergraph that the gateway serves. */
export const SUPERGRAPH_PATH = path.join(SCHEMA_DIR, 'supergraph.graphql');
/** The committed API schema: what clients of the gateway see, the contract that the breaking-change check guards. */
export const API_SCHEMA_PATH = path.join(SCHEMA_DIR, 'api-schema.graphql');
const SUBGRAPHS = [
  { name: 'user', port: 4001 },
  { name: 'cards', port: 4002 },
  { name: 'payments', port: 4003 },
  { name: 'compliance', port: 4004 },
] as const;

/** Result of composing the four subgraph SDL files: the supergraph and its API schema (sorted, printed). */
export type Composition = { supergraphSdl: string; apiSchemaSdl: string; errors: [] } | { supergraphSdl: null; apiSchemaSdl: null; errors: string[] };

/**
 * Composes the supergraph from SDL texts (by default the committed `schema/<name>.graphql`
 * files). The routing URLs are the local defaults; the gateway replaces them with its configuration.
 */
export function composeSupergraph(sdls: Record<string, string> = readSubgraphSdls()): Composition {
  const result = composeServices(
    SUBGRAPHS.map(({ name, port }) => ({ name, url: `http://127.0.0.1:${port}/graphql`, typeDefs: parse(sdls[name] ?? '') })),
  );
  if (result.errors) return { supergraphSdl: null, apiSchemaSdl: null, errors: result.errors.map((error) => error.message) };
  const apiSchemaSdl = printSchema(lexicographicSortSchema(result.schema.toAPISchema().toGraphQLJSSchema()));
  return { supergraphSdl: result.supergraphSdl, apiSchemaSdl, errors: [] };
}

export function readSubgraphSdls(): Record<string, string> {
  return Object.fromEntries(SUBGRAPHS.map(({ name }) => [name, readFileSync(path.join(SCHEMA_DIR, `${name}.graphql`), 'utf8')]));
}

/**
 * Compares a fresh composition with the committed supergraph (and API schema, when given): stale
 * when either differs, or errors when composition fails.
 */
export function checkSupergraph(committed: string, sdls?: Record<string, string>, committedApiSchema?: string): { stale: boolean; errors: string[] } {
  const composed = composeSupergraph(sdls);
  if (composed.supergraphSdl === null) return { stale: true, errors: composed.errors };
  const apiStale = committedApiSchema !== undefined && composed.apiSchemaSdl.trim() !== committedApiSchema.trim();
  return { stale: composed.supergraphSdl.trim() !== committed.trim() || apiStale, errors: [] };
}
