import type { MigrationLog, StoredDocument } from '../mongo/migrations.js';
import { HOME_CURRENCY, minorFromLegacy } from './money.js';

/**
 * The members `names` of a document stored before amounts were kept in minor units (floats in the
 * currency's units), in minor units of `currency`; null when it holds none. An amount a currency
 * without cents cannot hold (12.34 JPY, which the old checks let in) is rounded, and the log says
 * which. A record that names no currency is in US dollars, as the old code meant.
 */
export function legacyAmounts(
  log: MigrationLog,
  where: { migration: string; collection: string },
  doc: StoredDocument,
  names: readonly string[],
  currency: unknown,
): Record<string, unknown> | null {
  const code = typeof currency === 'string' ? currency : HOME_CURRENCY;
  const changes: Record<string, unknown> = {};
  for (const name of names) {
    const value = doc[name];
    if (typeof value !== 'number') continue;
    const { amount, exact } = minorFromLegacy(value, code);
    if (!exact) log("amount rounded to its currency's minor unit", { ...where, _id: doc._id, field: name, was: value, currency: code });
    changes[name] = amount;
  }
  return Object.keys(changes).length > 0 ? changes : null;
}
