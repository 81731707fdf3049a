import { readFileSync } from 'node:fs';
import { buildSchema, getNamedType, isInputObjectType, isInterfaceType, isObjectType } from 'graphql';
import { describe, expect, it } from 'vitest';
import { API_SCHEMA_PATH } from '../../schema/compose.js';

const api = buildSchema(readFileSync(API_SCHEMA_PATH, 'utf8'));

/** Every field and input field of the API schema, with its owner, and every argument. */
function everyField(): Array<{ at: string; name: string; type: string }> {
  const fields: Array<{ at: string; name: string; type: string }> = [];
  for (const type of Object.values(api.getTypeMap())) {
    if (type.name.startsWith('__')) continue;
    if (isInputObjectType(type)) {
      for (const field of Object.values(type.getFields()))
        fields.push({ at: `${type.name}.${field.name}`, name: field.name, type: getNamedType(field.type).name });
    } else if (isObjectType(type) || isInterfaceType(type)) {
      for (const field of Object.values(type.getFields())) {
        fields.push({ at: `${type.name}.${field.name}`, name: field.name, type: getNamedType(field.type).name });
        for (const arg of field.args)
          fields.push({ at: `${type.name}.${field.name}(${arg.name})`, name: arg.name, type: getNamedType(arg.type).name });
      }
    }
  }
  return fields;
}

/** Names of money: amounts, balances, fees, debits and credits. */
const MONEY = /^(amount|balance|fee|debit|credit|available_balance)$|(Amount|Balance)$|^amount(From|To)$/;
/** Float fields that measure something other than money; each is named here on purpose. */
const MEASURES = new Set([
  'GeocodeCandidate.latitude',
  'GeocodeCandidate.longitude',
  'GeocodeCandidate.confidence',
  'UserExtras.heightMetric',
  'UserExtras.weightMetric',
  'CardAuthorization.decisionMs',
  'CardAuthorizationResult.decisionMs',
  'DeliveryAttempt.durationMs',
  'AchReturnRates.adminRate',
  'AchReturnRates.adminAmountRate',
  'AchReturnRates.unAuthorizedRate',
  'AchReturnRates.unAuthorizedAmountRate',
  'AchReturnRates.totalRate',
  'AchReturnRates.totalAmountRate',
  'CardAuthorizationSummary.approvalRate',
]);

describe('money in the API schema', () => {
  it('is Decimal wherever a field or argument names an amount, and never Float', () => {
    const money = everyField().filter((field) => MONEY.test(field.name));
    expect(money.length).toBeGreaterThan(30);
    expect(money.filter((field) => field.type !== 'Decimal').map((field) => `${field.at}: ${field.type}`)).toEqual([]);
  });

  it('has no Float but the measures that are not money', () => {
    const floats = everyField()
      .filter((field) => field.type === 'Float')
      .map((field) => field.at);
    expect(new Set(floats)).toEqual(MEASURES);
  });

  it('types every single currency as CurrencyCode', () => {
    // Lists of currencies also hold `*` (every currency), so they stay String.
    const currencies = everyField().filter((field) => /currency(_code)?$/i.test(field.name));
    expect(currencies.length).toBeGreaterThan(20);
    expect(currencies.filter((field) => field.type !== 'CurrencyCode').map((field) => `${field.at}: ${field.type}`)).toEqual([]);
  });
});
