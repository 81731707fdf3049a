/**
 * How a subgraph calls the graph: through the gateway, as an internal service, with a principal
 * signed by INTERNAL_SECRET. Cross-domain reads and writes travel this way, never through
 * another subgraph's database.
 */
export interface GraphClient {
  request<T>(query: string, variables?: Record<string, unknown>, requestId?: string): Promise<T>;
}
