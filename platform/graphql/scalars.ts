import { GraphQLError, GraphQLScalarType, Kind, type ValueNode } from 'graphql';
import { GraphQLJSONObject } from 'graphql-scalars';
import { ErrorCode } from '../contracts/errors.js';
import { canonicalDecimal, isCurrencyCode } from '../money/money.js';
import { isIsoDate, isIsoDateTime } from '../contracts/dates.js';

function invalid(name: string, message: string): GraphQLError {
  return new GraphQLError(`${name}: ${message}`, { extensions: { code: ErrorCode.VALIDATION_FAILED } });
}

/** A string scalar checked against a documented pattern and length, on input and on output. */
function patternScalar(name: string, description: string, check: (value: string) => string | null): GraphQLScalarType<string, string> {
  const parse = (value: unknown): string => {
    if (typeof value !== 'string') throw invalid(name, `expected a string, got ${value === null ? 'null' : typeof value}`);
    const problem = check(value);
    if (problem) throw invalid(name, problem);
    return value;
  };
  return new GraphQLScalarType<string, string>({
    name,
    description,
    serialize: (value) => parse(value),
    parseValue: (value) => parse(value),
    parseLiteral: (ast: ValueNode) => {
      if (ast.kind !== Kind.STRING) throw invalid(name, 'expected a string literal');
      return parse(ast.value);
    },
  });
}

const noAngles = (value: string) =>
  /[<>]/.test(value) ? 'must not contain < or >' : value.trim() === '' ? 'must not be only whitespace' : null;

/** `[A-Za-z0-9_]{1,36}`: the specs' id pattern. */
export const SvcId = patternScalar('SvcId', 'An identifier: 1-36 letters, digits or underscores.', (v) =>
  /^[A-Za-z0-9_]{1,36}$/.test(v) ? null : 'must be 1-36 letters, digits or underscores',
);

/** `[A-Za-z0-9]{1,32}`: the specs' external references. */
const Reference = patternScalar('Reference', 'An external reference: 1-32 letters or digits.', (v) =>
  /^[A-Za-z0-9]{1,32}$/.test(v) ? null : 'must be 1-32 letters or digits',
);

/** Acquirer reference number: 1-50 characters, no `<` or `>`, not only whitespace. */
const Arn = patternScalar('Arn', 'Acquirer reference number: 1-50 characters, no < or >, not only whitespace.', (v) =>
  v.length < 1 || v.length > 50 ? 'must be 1-50 characters' : noAngles(v),
);

/** A US ABA routing number: exactly 9 digits. */
export const RoutingNumber = patternScalar('RoutingNumber', 'A routing number: exactly 9 digits.', (v) =>
  /^[0-9]{9}$/.test(v) ? null : 'must be exactly 9 digits',
);

/** An ISO 4217 currency code in use. */
export const CurrencyCode = patternScalar('CurrencyCode', 'An ISO 4217 currency code in use, in capitals: USD, EUR, JPY.', (v) =>
  isCurrencyCode(v) ? null : 'must be an ISO 4217 currency code in use, such as USD',
);

/**
 * An exact decimal amount, as text. Output is written with the currency's minor-unit places
 * ("12.50" USD, "1250" JPY); a number is refused there, since only a resolver that knows the
 * currency can write one. Input is decimal text or a JSON number read as the decimal it is written
 * as; the resolver then checks its places against the currency.
 */
export const Decimal = new GraphQLScalarType<string, string>({
  name: 'Decimal',
  description: 'An exact decimal amount as a string, e.g. "12.50": never a binary float.',
  serialize(value) {
    if (typeof value !== 'string' || canonicalDecimal(value) === null)
      throw invalid('Decimal', 'cannot serialize a value that is not decimal text');
    return value;
  },
  parseValue(value) {
    const decimal = canonicalDecimal(value);
    if (decimal === null) throw invalid('Decimal', 'must be a decimal amount of at most 15 digits, as a string such as "12.50"');
    return decimal;
  },
  parseLiteral(ast) {
    const decimal = ast.kind === Kind.STRING || ast.kind === Kind.INT || ast.kind === Kind.FLOAT ? canonicalDecimal(ast.value) : null;
    if (decimal === null) throw invalid('Decimal', 'must be a decimal amount of at most 15 digits, as a string such as "12.50"');
    return decimal;
  },
});

/** A calendar date, YYYY-MM-DD. */
const DateScalar = patternScalar('Date', 'A calendar date, YYYY-MM-DD.', (v) =>
  isIsoDate(v) ? null : 'must be a date written YYYY-MM-DD',
);

/** An ISO 8601 timestamp. Stored `Date` values serialize to UTC ISO strings. */
const DateTime = new GraphQLScalarType<Date, string>({
  name: 'DateTime',
  description: 'An ISO 8601 date-time with a time zone, e.g. 2026-11-22T10:15:00.000Z.',
  serialize(value) {
    if (value instanceof Date) return value.toISOString();
    if (typeof value === 'string' && isIsoDateTime(value)) return new Date(value).toISOString();
    throw invalid('DateTime', 'cannot serialize a non-date value');
  },
  parseValue(value) {
    if (typeof value !== 'string' || !isIsoDateTime(value)) throw invalid('DateTime', 'must be an ISO 8601 date-time with a time zone');
    return new Date(value);
  },
  parseLiteral(ast) {
    if (ast.kind !== Kind.STRING || !isIsoDateTime(ast.value)) throw invalid('DateTime', 'must be an ISO 8601 date-time with a time zone');
    return new Date(ast.value);
  },
});

/** The first member name of a JSON value, at any depth, that a stored document cannot have: `$…`, a `.` or a NUL. */
function unstorableKey(value: unknown): string | null {
  if (Array.isArray(value)) {
    for (const item of value) {
      const found = unstorableKey(item);
      if (found !== null) return found;
    }
    return null;
  }
  if (value === null || typeof value !== 'object') return null;
  for (const [key, member] of Object.entries(value)) {
    if (key.startsWith('$') || key.includes('.') || key.includes('\u0000')) return key;
    const found = unstorableKey(member);
    if (found !== null) return found;
  }
  return null;
}

/**
 * A JSON object (graphql-scalars' JSONObject) that can be stored as it is: no member name starts
 * with `$` or contains `.` or NUL, at any depth (the database refuses such names, and `$` names
 * read like query operators).
 */
const JSONObject = new GraphQLScalarType<Record<string, unknown>, Record<string, unknown>>({
  name: 'JSONObject',
  description: GraphQLJSONObject.description,
  serialize: (value) => GraphQLJSONObject.serialize(value) as Record<string, unknown>,
  parseValue: (value) => storable(GraphQLJSONObject.parseValue(value) as Record<string, unknown>),
  parseLiteral: (ast, variables) => storable(GraphQLJSONObject.parseLiteral(ast, variables) as Record<string, unknown>),
});

/** The parsed object, when every member name can be stored. */
function storable(parsed: Record<string, unknown>): Record<string, unknown> {
  const key = unstorableKey(parsed);
  if (key !== null)
    throw invalid('JSONObject', `member names must not start with $ or contain . or NUL (got ${JSON.stringify(key.slice(0, 40))})`);
  return parsed;
}

/** Any JSON object (graphql-scalars' JSONObject under its own name), for input that is read and never stored. */
const AnyJSONObject = new GraphQLScalarType({
  ...GraphQLJSONObject.toConfig(),
  name: 'AnyJSONObject',
  description: 'A free-form JSON object that is read and not stored: any member names.',
});

/** Every custom scalar, by its SDL name, for a subgraph's resolver map. */
export const scalarResolvers = {
  SvcId,
  Reference,
  Arn,
  RoutingNumber,
  CurrencyCode,
  Decimal,
  Date: DateScalar,
  DateTime,
  JSONObject,
  AnyJSONObject,
};
