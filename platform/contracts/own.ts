/**
 * Lookups in constant tables by a key that may have come from a client. A plain object inherits
 * `valueOf`, `constructor`, `__proto__` and the rest from Object.prototype, so `TABLE[key]` with
 * such a key finds a function or the prototype instead of nothing. These read own keys only; the
 * lint rule `banking/no-table-lookup` (scripts/lint) sends every other lookup here.
 */

/** True when `key` is one of `table`'s own keys; narrows it to the table's key type. */
export function isOwnKey<T extends object>(table: T, key: unknown): key is keyof T & string {
  return typeof key === 'string' && Object.hasOwn(table, key);
}

/** The value `table` holds under its own key `key`, or undefined (an inherited name finds nothing). */
export function ownValue<V>(table: Readonly<Record<string, V>>, key: string): V | undefined {
  return Object.hasOwn(table, key) ? table[key] : undefined;
}

/** True when `value` is one of `list`'s values; narrows it to the list's element type (a closed set's constant). */
export function isOneOf<T extends string>(list: readonly T[], value: unknown): value is T {
  return typeof value === 'string' && (list as readonly string[]).includes(value);
}
