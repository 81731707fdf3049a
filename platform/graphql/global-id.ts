/**
 * A type's global id: its name and its own key, `Transaction:txn_…`. Keys alone are not unique
 * across the graph (a payment link and a refund both key on `svcTransactionId`, and demo and
 * aggregator-chosen ids carry no type prefix), so the type's name goes first. Clients' caches
 * (Apollo Client, Relay, urql) normalize every record by it.
 */
export function globalId(type: string, key: string): string {
  return `${type}:${key}`;
}
