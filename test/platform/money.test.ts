import fc from 'fast-check';
import { GraphQLError, Kind } from 'graphql';
import { describe, expect, it } from 'vitest';
import { refusal } from '../support/refusal.js';
import { CurrencyCode, Decimal } from '../../platform/graphql/scalars.js';
import { ISO_4217 } from '../../platform/money/iso4217.js';
import {
  amountBound,
  canonicalDecimal,
  checkAmount,
  fromMinor,
  isCurrencyCode,
  minor,
  minorDigits,
  sumMinor,
  toJsonNumber,
  toMinor,
} from '../../platform/money/money.js';

describe('money in minor units', () => {
  it("takes each currency's minor unit from ISO 4217, not from the runtime's display rules", () => {
    const places = ['USD', 'EUR', 'JPY', 'BHD', 'KWD', 'CLF', 'UYW', 'HUF', 'COP', 'IDR', 'IQD', 'MMK'].map(minorDigits);
    expect(places).toEqual([2, 2, 0, 3, 3, 4, 4, 2, 2, 2, 3, 2]);
    for (const code of ['USD', 'CLF', 'UYW', 'XCG', 'VED']) expect(isCurrencyCode(code), code).toBe(true);
    // Withdrawn codes, metals and test codes are no money here; nor is anything that is not a code.
    for (const code of ['HRK', 'SLL', 'XAU', 'XDR', 'XXX', 'usd', 'XYZ', 'US', '', 'valueOf', '__proto__', 12])
      expect(isCurrencyCode(code), String(code)).toBe(false);
    // A stored code from before codes were checked reads with two places, as the checks of that time assumed.
    expect(minorDigits('XYZ')).toBe(2);
    expect(minorDigits('valueOf')).toBe(2);
  });

  it('reads decimal text and JSON numbers exactly', () => {
    expect(toMinor('19.99', 'USD', 'amount')).toBe(1999);
    expect(toMinor(19.99, 'USD', 'amount')).toBe(1999);
    expect(toMinor(4.35, 'USD', 'amount')).toBe(435);
    expect(toMinor('1.1', 'USD', 'amount')).toBe(110);
    expect(toMinor('-0.07', 'USD', 'amount')).toBe(-7);
    expect(toMinor('1250', 'JPY', 'amount')).toBe(1250);
    expect(toMinor('1.234', 'BHD', 'amount')).toBe(1234);
    expect(toMinor('1000000.00', 'USD', 'amount')).toBe(100_000_000);
    // A JSON number's binary noise past 15 significant digits is not part of the decimal it was meant as.
    expect(toMinor(0.1 + 0.2, 'USD', 'amount')).toBe(30);
    expect(toMinor(1.1 * 3, 'USD', 'amount')).toBe(330);
  });

  it('refuses an amount whose minor units are no exact integer, naming the field', () => {
    expect(refusal(() => toMinor('999999999999999', 'USD', 'amount'))).toMatchObject({ code: 'VALIDATION_FAILED', field: 'amount' });
    expect(refusal(() => toMinor('99999999999999.9', 'BHD', 'amount'))).toMatchObject({ code: 'VALIDATION_FAILED', field: 'amount' });
    expect(toMinor('99999999999.99', 'USD', 'amount')).toBe(9_999_999_999_999);
  });

  it('refuses more places than the currency has, and anything that is not a decimal, naming the field', () => {
    for (const [value, currency] of [
      ['1.005', 'USD'],
      ['0.001', 'USD'],
      ['12.5', 'JPY'],
      ['1.2345', 'BHD'],
    ] as const) {
      expect(
        refusal(() => toMinor(value, currency, 'amount')),
        `${value} ${currency}`,
      ).toMatchObject({ code: 'VALIDATION_FAILED', field: 'amount' });
    }
    for (const value of [
      '',
      '1e3',
      '1,00',
      ' 1',
      '01',
      '.5',
      '5.',
      '--1',
      'NaN',
      Number.NaN,
      Infinity,
      1e21,
      '1234567890123456',
      null,
      true,
      {},
    ]) {
      expect(canonicalDecimal(value), JSON.stringify(value)).toBeNull();
      expect(
        refusal(() => toMinor(value, 'USD', 'filter.minAmount')),
        JSON.stringify(value),
      ).toMatchObject({ code: 'VALIDATION_FAILED', field: 'filter.minAmount' });
    }
  });

  it("writes amounts with exactly the currency's places", () => {
    expect(fromMinor(minor(1250), 'USD')).toBe('12.50');
    expect(fromMinor(minor(-7), 'USD')).toBe('-0.07');
    expect(fromMinor(minor(0), 'USD')).toBe('0.00');
    expect(fromMinor(minor(1250), 'JPY')).toBe('1250');
    expect(fromMinor(minor(1), 'BHD')).toBe('0.001');
    expect(toJsonNumber(minor(245_075), 'USD')).toBe(2450.75);
  });

  it('round-trips every amount through its text, in every currency', () => {
    const currencies = [...ISO_4217.keys()];
    fc.assert(
      fc.property(fc.integer({ min: -(10 ** 13), max: 10 ** 13 }), fc.constantFrom(...currencies), (units, currency) => {
        expect(toMinor(fromMinor(minor(units), currency), currency, 'amount')).toBe(units);
      }),
      { seed: 20261127, numRuns: 500 },
    );
  });

  it('adds without drift where binary fractions would', () => {
    expect(0.1 + 0.2).not.toBe(0.3);
    expect(fromMinor(sumMinor(toMinor('0.1', 'USD', 'a'), toMinor('0.2', 'USD', 'b')), 'USD')).toBe('0.30');
    const cents = Array.from({ length: 1000 }, () => toMinor('19.99', 'USD', 'amount'));
    expect(fromMinor(sumMinor(...cents), 'USD')).toBe('19990.00');
  });

  it('checks the range of an amount a client sent', () => {
    expect(checkAmount('1000000', 'USD', 'amount', { max: '1000000' })).toBe(100_000_000);
    expect(checkAmount('0', 'USD', 'defaultAmount', { zero: true })).toBe(0);
    for (const [value, rule] of [
      ['0', {}],
      ['-1', { zero: true }],
      ['1000000.01', { max: '1000000' }],
    ] as const) {
      expect(() => checkAmount(value, 'USD', 'amount', rule), value).toThrow(/amount must be/);
    }
  });

  it("bounds amounts in each record's own currency, rounding a finer bound inward", () => {
    type Clause = { currency: { $in?: string[]; $nin?: string[] }; amount?: unknown };
    const clauseOf = (clauses: Clause[], currency: string) =>
      clauses.find((clause) => (clause.currency.$in ? clause.currency.$in.includes(currency) : !clause.currency.$nin!.includes(currency)));
    const lower = amountBound('amount', '$gte', '10.005').$or as Clause[];
    expect(clauseOf(lower, 'USD')?.amount).toEqual({ $gte: 1001 });
    expect(clauseOf(lower, 'JPY')?.amount).toEqual({ $gte: 11 });
    expect(clauseOf(lower, 'BHD')?.amount).toEqual({ $gte: 10005 });
    // A stored code outside the list reads with two places, so it falls in the two-place clause.
    expect(clauseOf(lower, 'XYZ')?.amount).toEqual({ $gte: 1001 });
    expect(clauseOf(amountBound('amount', '$lte', '10.005').$or as Clause[], 'USD')?.amount).toEqual({ $lte: 1000 });
  });
});

describe('the Decimal and CurrencyCode scalars', () => {
  it('take decimal text or a JSON number, and give text', () => {
    expect(Decimal.parseValue('12.50')).toBe('12.5');
    expect(Decimal.parseValue(12.5)).toBe('12.5');
    expect(Decimal.parseLiteral({ kind: Kind.STRING, value: '0.10' })).toBe('0.1');
    expect(Decimal.parseLiteral({ kind: Kind.FLOAT, value: '19.99' })).toBe('19.99');
    expect(Decimal.serialize('12.50')).toBe('12.50');
  });

  it('refuse a float on output (only a resolver that knows the currency can write an amount) and bad input', () => {
    expect(() => Decimal.serialize(12.5)).toThrow(GraphQLError);
    for (const value of ['1e3', 'twelve', true, null, {}])
      expect(() => Decimal.parseValue(value), JSON.stringify(value)).toThrow(GraphQLError);
    expect(() => Decimal.parseLiteral({ kind: Kind.FLOAT, value: '1e3' })).toThrow(GraphQLError);
  });

  it('accept only ISO 4217 codes in use', () => {
    expect(CurrencyCode.parseValue('EUR')).toBe('EUR');
    for (const value of ['eur', 'XYZ', 'valueOf', 978]) expect(() => CurrencyCode.parseValue(value), String(value)).toThrow(GraphQLError);
  });
});
