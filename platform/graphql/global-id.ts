/**
 * A type's global id: its name and its own key, `Transaction:txn_…`. Keys alone are not unique
 * across the graph (a payment link and a refund both key on `svcTransactionId`, and demo and
 * aggregator-chosen ids carry no type prefix), so the type's name goes first. Clients' caches
 * (Apollo Client, Relay, urql) normalize every record by it.
 */
export function globalId(type: string, key: string): string {
  return `${type}:${key}`;
}

/** The type and own key of a global id; null when it is not one (no `:`, or an empty part). */
export function parseGlobalId(id: string): { type: string; key: string } | null {
  const colon = id.indexOf(':');
  if (colon <= 0 || colon === id.length - 1) return null;
  return { type: id.slice(0, colon), key: id.slice(colon + 1) };
}

/**
 * The own key an entity reference names: by the key field itself, or by a global id of this
 * type (`node(id:)` and clients refetching a record send the id). Null for an id of another type
 * or a reference naming neither, which resolves to no record.
 */
export function ownKey(reference: object, type: string, keyField: string): string | null {
  const fields = reference as Record<string, unknown>;
  const key = Object.hasOwn(fields, keyField) ? fields[keyField] : undefined;
  if (typeof key === 'string') return key;
  const id = Object.hasOwn(fields, 'id') ? fields.id : undefined;
  const parsed = typeof id === 'string' ? parseGlobalId(id) : null;
  return parsed?.type === type ? parsed.key : null;
}
