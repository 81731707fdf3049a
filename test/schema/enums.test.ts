import { readFileSync } from 'node:fs';
import { buildSchema, isEnumType } from 'graphql';
import { describe, expect, it } from 'vitest';
import { API_SCHEMA_PATH } from '../../schema/compose.js';
import { PAYMENT_LINK_STATUSES } from '../../subgraphs/payments/src/payment-links/datasource.js';

// A closed set is an enum whose values are the specs' own spellings, which the REST adapter passes on unchanged.
const api = buildSchema(readFileSync(API_SCHEMA_PATH, 'utf8'));
const valuesOf = (name: string) => {
  const type = api.getType(name);
  if (!isEnumType(type)) throw new Error(`${name} is not an enum of the API schema`);
  // The committed API schema is sorted: values are compared as sets.
  return type.getValues().map((value) => value.name).sort();
};

describe('closed sets in the API schema', () => {
  it("spell each value as the specs and the stored documents do", () => {
    expect(valuesOf('PaymentLinkStatus')).toEqual([...PAYMENT_LINK_STATUSES].sort());
    expect(valuesOf('CardStatus')).toEqual(['active', 'blocked'].sort());
    expect(valuesOf('AchPaymentStatus')).toEqual(['Processing', 'Settled', 'Returned'].sort());
    expect(valuesOf('ApplicationStatus')).toEqual(['pending_step_up', 'completed'].sort());
    expect(valuesOf('DeliveryStatus')).toEqual(['pending', 'delivered', 'failed', 'paused'].sort());
  });

  it('type the status fields by their enums', () => {
    const fieldType = (type: string, field: string) => {
      const named = api.getType(type);
      if (!named || !('getFields' in named)) throw new Error(`${type} has no fields`);
      return String(named.getFields()[field]?.type);
    };
    expect(fieldType('Card', 'status')).toBe('CardStatus!');
    expect(fieldType('PaymentLink', 'status')).toBe('PaymentLinkStatus!');
    expect(fieldType('StatusChange', 'status')).toBe('PaymentLinkStatus!');
    expect(fieldType('AchPayment', 'status')).toBe('AchPaymentStatus!');
    expect(fieldType('Application', 'status')).toBe('ApplicationStatus!');
    expect(fieldType('Delivery', 'status')).toBe('DeliveryStatus!');
    expect(fieldType('CardWebhookDelivery', 'status')).toBe('DeliveryStatus!');
  });
});
