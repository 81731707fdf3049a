import { readFileSync } from 'node:fs';
import { buildSchema, getNamedType, isNonNullType, isObjectType } from 'graphql';
import { describe, expect, it } from 'vitest';
import { API_SCHEMA_PATH } from '../../schema/compose.js';

const api = buildSchema(readFileSync(API_SCHEMA_PATH, 'utf8'));

/**
 * Object types that carry an identifier but are no record of their own: mutation answers, value
 * objects inside their owner, and records whose identity is their owner's and another key.
 */
const NOT_RECORDS = new Set([
  'AchResult',
  'AggregatorViewer',
  'CardAuthorizationResult',
  'CardResult',
  'CardStatusResult',
  'CondorCardAdditionalData',
  'CondorCardResult',
  'CustomerInitResult',
  'DeviceRegistrationResult',
  'LoginResult',
  'OnboardingSocketResult',
  'OpenedAccount',
  'ProspectDataResult',
  'ProspectImageResult',
  'WebhookConfigResult',
  'LogoUpload',
  'TransactionInternal',
  // Inside their owner, keyed by the owner and a member: a report's figures, an application's entity, a user's alert, a link's history entry.
  'AchReturnRates',
  'EntityApplication',
  'Alert',
  'StatusChange',
]);

describe("ids for clients' caches", () => {
  it('gives every record with a key of its own an id: ID!', () => {
    const missing: string[] = [];
    for (const type of Object.values(api.getTypeMap())) {
      if (
        !isObjectType(type) ||
        type.name.startsWith('__') ||
        ['Query', 'Mutation', 'Subscription'].includes(type.name) ||
        NOT_RECORDS.has(type.name)
      )
        continue;
      const fields = type.getFields();
      const keyed = Object.values(fields).some((field) => isNonNullType(field.type) && getNamedType(field.type).name === 'ID');
      if (keyed && String(fields.id?.type) !== 'ID!') missing.push(type.name);
    }
    expect(missing).toEqual([]);
  });

  it('names only types that exist among the exceptions', () => {
    for (const name of NOT_RECORDS) expect(api.getType(name), name).toBeDefined();
  });
});
