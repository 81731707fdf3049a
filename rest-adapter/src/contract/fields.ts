import {
  ARN_RULE,
  CURRENCY_RULE,
  EMAIL_RULE,
  ID_RULE,
  PHONE_RULE,
  REFERENCE_RULE,
  ROUTING_NUMBER_RULE,
} from '../../../platform/security/validate.js';
import { arrayOf, nullable, stringOf, type JsonSchema } from './json-schema.js';

/** Request field schemas the routes share, from the graph's own rules. */
export const FIELD = {
  id: stringOf(ID_RULE, '1-36 letters, digits or underscores'),
  reference: stringOf(REFERENCE_RULE, '1-32 letters or digits'),
  arn: stringOf(ARN_RULE, '1-50 characters, no < or >, not only whitespace'),
  routingNumber: stringOf(ROUTING_NUMBER_RULE, 'exactly 9 digits'),
  currency: stringOf(CURRENCY_RULE, 'ISO 4217 code, three capital letters'),
  email: stringOf(EMAIL_RULE, 'an email address'),
  phone: stringOf(PHONE_RULE, '6-15 digits, optionally starting with +'),
  date: { type: 'string', format: 'date', description: 'ISO date, YYYY-MM-DD' },
  string: { type: 'string' },
  boolean: { type: 'boolean' },
  number: { type: 'number' },
  object: { type: 'object' },
  strings: arrayOf({ type: 'string' }),
} satisfies Record<string, JsonSchema>;

/** `numberOfRecords` and `skipRecords` of the aggregator's paged lists. */
export const PAGING: Record<string, JsonSchema> = {
  numberOfRecords: nullable({ type: 'integer', minimum: 1, maximum: 1000 }),
  skipRecords: nullable({ type: 'integer', minimum: 0 }),
};
