import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { composeServices } from '@apollo/composition';
import { extendSchema, lexicographicSortSchema, parse, printSchema, type GraphQLSchema } from 'graphql';

const SCHEMA_DIR = path.dirname(fileURLToPath(import.meta.url));
/** The committed supergraph that the gateway serves. */
export const SUPERGRAPH_PATH = path.join(SCHEMA_DIR, 'supergraph.graphql');
/** The committed API schema: what clients of the gateway see, the contract that the breaking-change check guards. */
export const API_SCHEMA_PATH = path.join(SCHEMA_DIR, 'api-schema.graphql');
/** The Subscription type the gateway serves itself (no subgraph resolves it): added to the composed API schema. */
export const GATEWAY_SUBSCRIPTIONS_PATH = path.join(SCHEMA_DIR, 'gateway-subscriptions.graphql');
const SUBGRAPHS = [
  { name: 'user', port: 4001 },
  { name: 'cards', port: 4002 },
  { name: 'payments', port: 4003 },
  { name: 'compliance', port: 4004 },
] as const;

/** Result of composing the four subgraph SDL files: the supergraph and its API schema (sorted, printed). */
export type Composition =
  { supergraphSdl: string; apiSchemaSdl: string; errors: [] } | { supergraphSdl: null; apiSchemaSdl: null; errors: string[] };

/**
 * Composes the supergraph from SDL texts (by default the committed `schema/<name>.graphql`
 * files), and its API schema with the gateway's own subscriptions (by default
 * `schema/gateway-subscriptions.graphql`). The routing URLs are the local defaults; the gateway
 * replaces them with its configuration.
 */
export function composeSupergraph(
  sdls: Record<string, string> = readSubgraphSdls(),
  subscriptionsSdl: string = readGatewaySubscriptionsSdl(),
): Composition {
  const result = composeServices(
    SUBGRAPHS.map(({ name, port }) => ({ name, url: `http://127.0.0.1:${port}/graphql`, typeDefs: parse(sdls[name] ?? '') })),
  );
  if (result.errors) return { supergraphSdl: null, apiSchemaSdl: null, errors: result.errors.map((error) => error.message) };
  let apiSchema: GraphQLSchema;
  try {
    apiSchema = withGatewaySubscriptions(result.schema.toAPISchema().toGraphQLJSSchema(), subscriptionsSdl);
  } catch (error) {
    return { supergraphSdl: null, apiSchemaSdl: null, errors: [(error as Error).message] };
  }
  const apiSchemaSdl = printSchema(lexicographicSortSchema(apiSchema));
  return { supergraphSdl: result.supergraphSdl, apiSchemaSdl, errors: [] };
}

function readGatewaySubscriptionsSdl(): string {
  return readFileSync(GATEWAY_SUBSCRIPTIONS_PATH, 'utf8');
}

/**
 * The composed API schema with the gateway's Subscription type: what clients see, over HTTP and
 * graphql-ws. Throws when a subgraph declares a Subscription type (subscriptions are the
 * gateway's) or when the gateway's SDL does not fit the graph (a type it names is missing).
 */
export function withGatewaySubscriptions(
  apiSchema: GraphQLSchema,
  subscriptionsSdl: string = readGatewaySubscriptionsSdl(),
): GraphQLSchema {
  if (apiSchema.getSubscriptionType() || apiSchema.getType('Subscription')) {
    throw new Error(
      `A subgraph declares a Subscription type: subscriptions are served by the gateway, declare them in schema/gateway-subscriptions.graphql.`,
    );
  }
  return extendSchema(apiSchema, parse(subscriptionsSdl));
}

export function readSubgraphSdls(): Record<string, string> {
  return Object.fromEntries(SUBGRAPHS.map(({ name }) => [name, readFileSync(path.join(SCHEMA_DIR, `${name}.graphql`), 'utf8')]));
}

/**
 * Compares a fresh composition with the committed supergraph (and API schema, when given): stale
 * when either differs, or errors when composition fails.
 */
export function checkSupergraph(
  committed: string,
  sdls?: Record<string, string>,
  committedApiSchema?: string,
  subscriptionsSdl?: string,
): { stale: boolean; errors: string[] } {
  const composed = composeSupergraph(sdls, subscriptionsSdl);
  if (composed.supergraphSdl === null) return { stale: true, errors: composed.errors };
  const apiStale = committedApiSchema !== undefined && composed.apiSchemaSdl.trim() !== committedApiSchema.trim();
  return { stale: composed.supergraphSdl.trim() !== committed.trim() || apiStale, errors: [] };
}
