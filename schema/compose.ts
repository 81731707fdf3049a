import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { composeServices } from '@apollo/composition';
import { parse } from 'graphql';

const SCHEMA_DIR = path.dirname(fileURLToPath(import.meta.url));
/** The committed supergraph that the gateway serves. */
export const SUPERGRAPH_PATH = path.join(SCHEMA_DIR, 'supergraph.graphql');
const SUBGRAPHS = [
  { name: 'user', port: 4001 },
  { name: 'cards', port: 4002 },
  { name: 'payments', port: 4003 },
  { name: 'compliance', port: 4004 },
] as const;

/** Result of composing the four subgraph SDL files. */
export type Composition = { supergraphSdl: string; errors: [] } | { supergraphSdl: null; errors: string[] };

/**
 * Composes the supergraph from SDL texts (by default the committed `schema/<name>.graphql`
 * files). The routing URLs are the local defaults; the gateway replaces them with its configuration.
 */
export function composeSupergraph(sdls: Record<string, string> = readSubgraphSdls()): Composition {
  const result = composeServices(
    SUBGRAPHS.map(({ name, port }) => ({ name, url: `http://127.0.0.1:${port}/graphql`, typeDefs: parse(sdls[name] ?? '') })),
  );
  if (result.errors) return { supergraphSdl: null, errors: result.errors.map((error) => error.message) };
  return { supergraphSdl: result.supergraphSdl, errors: [] };
}

export function readSubgraphSdls(): Record<string, string> {
  return Object.fromEntries(SUBGRAPHS.map(({ name }) => [name, readFileSync(path.join(SCHEMA_DIR, `${name}.graphql`), 'utf8')]));
}

/** Compares a fresh composition with a supergraph text: stale when they differ, or errors when composition fails. */
export function checkSupergraph(committed: string, sdls?: Record<string, string>): { stale: boolean; errors: string[] } {
  const composed = composeSupergraph(sdls);
  if (composed.supergraphSdl === null) return { stale: true, errors: composed.errors };
  return { stale: composed.supergraphSdl.trim() !== committed.trim(), errors: [] };
}
