import { appError, ErrorCode } from '../contracts/errors.js';
import { ISO_4217 } from './iso4217.js';

declare const minorUnitsBrand: unique symbol;

/**
 * An amount as an integer count of its currency's minor units (cents for USD, yen for JPY, fils
 * for BHD): how money is stored and summed. The brand keeps a decimal amount from being stored
 * or added by mistake; `toMinor`, `minor` and `sumMinor` make one.
 */
export type MinorUnits = number & { readonly [minorUnitsBrand]: true };

/**
 * The bank's home currency, US dollars: the currency of the amounts whose record names none
 * (ACH entries and return rates, aggregator funds, a beneficiary without a currency).
 */
export const HOME_CURRENCY = 'USD';

/** Zero in any currency. */
export const ZERO = 0 as MinorUnits;

/** True when `code` is an ISO 4217 code of a currency or fund in use (USD, EUR, JPY ...). */
export function isCurrencyCode(code: unknown): code is string {
  return typeof code === 'string' && ISO_4217.has(code);
}

/**
 * How many decimal places the currency's minor unit has (USD 2, JPY 0, BHD 3), from ISO 4217. A
 * stored code outside the list (written before codes were checked against it) reads with two,
 * as the checks of that time assumed.
 */
export function minorDigits(currency: string): number {
  return ISO_4217.get(currency) ?? 2;
}

/** Decimal text as the `Decimal` scalar takes and gives it: an optional minus, digits, an optional fraction. */
const DECIMAL = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?$/;
/** The most significant digits an amount may have, so that its minor units stay an exact JavaScript integer. */
const MAX_DIGITS = 15;

/**
 * The amount `value` as canonical decimal text ("12.5", "-0.01", "100"), or null when it is not
 * one. A string must be decimal text; a JSON number is read as the decimal it was written as
 * (its shortest representation), which is exact for up to 15 significant digits.
 */
export function canonicalDecimal(value: unknown): string | null {
  let text: string;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return null;
    // A double holds 15 significant digits exactly; past them is binary noise (0.1 + 0.2).
    text = String(Number(value.toPrecision(15)));
    if (/e/i.test(text)) return null;
  } else if (typeof value === 'string') {
    text = value;
  } else {
    return null;
  }
  if (!DECIMAL.test(text)) return null;
  const [whole = '0', written = ''] = text.replace(/^-/, '').split('.');
  const fraction = written.replace(/0+$/, '');
  if ((whole === '0' ? 0 : whole.length) + fraction.length > MAX_DIGITS) return null;
  const zero = whole === '0' && fraction === '';
  return `${text.startsWith('-') && !zero ? '-' : ''}${whole}${fraction ? `.${fraction}` : ''}`;
}

/**
 * The decimal amount in the currency's minor units. Refused, naming `field`, when it is not
 * decimal text or a number, or has more decimal places than the currency's minor unit (12.345 USD).
 */
export function toMinor(value: unknown, currency: string, field: string): MinorUnits {
  const decimal = canonicalDecimal(value);
  if (decimal === null)
    throw appError(ErrorCode.VALIDATION_FAILED, `${field} must be a decimal amount of at most ${MAX_DIGITS} digits, such as 12.50.`, {
      field,
    });
  const digits = minorDigits(currency);
  const [whole = '0', fraction = ''] = decimal.replace(/^-/, '').split('.');
  if (fraction.length > digits) {
    throw appError(ErrorCode.VALIDATION_FAILED, `${field} has more decimal places than ${currency}'s minor unit (${digits}).`, { field });
  }
  const units = Number(whole + fraction.padEnd(digits, '0'));
  if (!Number.isSafeInteger(units)) throw appError(ErrorCode.VALIDATION_FAILED, `${field} is too large.`, { field });
  return (decimal.startsWith('-') ? -units : units) as MinorUnits;
}

/** The amount as canonical decimal text with exactly the currency's decimal places: 1250 USD → "12.50", 1250 JPY → "1250". */
export function fromMinor(amount: MinorUnits, currency: string): string {
  const digits = minorDigits(currency);
  const sign = amount < 0 ? '-' : '';
  const text = String(Math.abs(amount)).padStart(digits + 1, '0');
  return digits === 0 ? `${sign}${text}` : `${sign}${text.slice(0, -digits)}.${text.slice(-digits)}`;
}

/** The amount as a JSON number, for the REST answers and webhook payloads the specs show with numbers. */
export function toJsonNumber(amount: MinorUnits, currency: string): number {
  return Number(fromMinor(amount, currency));
}

/** An integer already in minor units (a stored value, a literal), branded; anything else is a programming error. */
export function minor(value: number): MinorUnits {
  if (!Number.isSafeInteger(value)) throw new RangeError(`not a whole number of minor units: ${value}`);
  return value as MinorUnits;
}

/** The exact sum of amounts in one currency. */
export function sumMinor(...amounts: MinorUnits[]): MinorUnits {
  return minor(amounts.reduce<number>((total, amount) => total + amount, 0));
}

/** The amount with its sign turned. */
export function negate(amount: MinorUnits): MinorUnits {
  return minor(amount === 0 ? 0 : 0 - amount);
}

/** What an amount taken from a client must be, besides decimal with the currency's places. */
export interface AmountRule {
  /** Whether 0 is allowed; negative amounts never are. */
  zero?: boolean;
  /** The largest amount, as decimal text in the currency's units. */
  max?: string;
}

/**
 * An amount a client sent, in minor units: decimal with at most the currency's places, positive
 * (or zero where `rule.zero`), at most `rule.max`. Refused, naming `field`, otherwise.
 */
export function checkAmount(value: unknown, currency: string, field: string, rule: AmountRule = {}): MinorUnits {
  const amount = toMinor(value, currency, field);
  const max = rule.max === undefined ? null : toMinor(rule.max, currency, field);
  if (amount < 0 || (amount === 0 && !rule.zero) || (max !== null && amount > max)) {
    const range = `${rule.zero ? 'from 0' : 'positive'}${rule.max === undefined ? '' : `, at most ${rule.max}`}`;
    throw appError(
      ErrorCode.VALIDATION_FAILED,
      `${field} must be ${range}, with at most ${minorDigits(currency)} decimal places for ${currency}.`,
      { field },
    );
  }
  return amount;
}

/** The codes whose minor unit has other than two places, by their places. */
const CODES_BY_PLACES = new Map<number, string[]>();
for (const [currency, digits] of ISO_4217) {
  if (digits !== 2) CODES_BY_PLACES.set(digits, [...(CODES_BY_PLACES.get(digits) ?? []), currency]);
}
const NOT_TWO_PLACES = [...CODES_BY_PLACES.values()].flat();

/**
 * A database filter on `field` (an amount in minor units beside a `currency` member) for amounts
 * `op` the decimal `bound`, read in each record's own currency: one clause per minor-unit scale,
 * since 10 is 1000 minor units in USD and 10 in JPY. A bound finer than a currency's minor unit
 * rounds inward (up for $gte, down for $lte), so the comparison stays exact.
 */
export function amountBound(field: string, op: '$gte' | '$lte', bound: string): { $or: Array<Record<string, unknown>> } {
  const decimal = canonicalDecimal(bound);
  if (decimal === null || decimal.startsWith('-')) throw new RangeError('amountBound takes a checked non-negative decimal');
  const [whole = '0', fraction = ''] = decimal.split('.');
  const limit = (digits: number) => {
    let units = Number(whole + fraction.slice(0, digits).padEnd(digits, '0'));
    if (op === '$gte' && /[1-9]/.test(fraction.slice(digits))) units += 1;
    return { [op]: units };
  };
  return {
    $or: [
      // Two places is every other code, a stored one outside the list included (see minorDigits).
      { currency: { $nin: NOT_TWO_PLACES }, [field]: limit(2) },
      ...[...CODES_BY_PLACES].map(([digits, currencies]) => ({ currency: { $in: currencies }, [field]: limit(digits) })),
    ],
  };
}

/**
 * An amount stored before amounts were kept in minor units: a binary float in the currency's
 * units, which the old checks held to whole cents (within a millionth) in every currency. Rounding
 * its product is exact for a currency of two places or more; `exact` is false where a currency of
 * fewer (12.34 JPY) loses a part, which the caller records.
 */
export function minorFromLegacy(value: number, currency: string): { amount: MinorUnits; exact: boolean } {
  const scaled = value * 10 ** minorDigits(currency);
  const amount = minor(Math.round(scaled));
  return { amount, exact: Math.abs(scaled - amount) < 1e-6 };
}
