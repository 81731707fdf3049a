import { describe, expect, it } from 'vitest';
import {
  evaluate,
  type ProceduralRestrictionDocument,
  type RestrictionDocument,
  type TransactionProposal,
} from '../../platform/domain/restrictions.js';
import { TRANSACTION_TYPES } from '../../subgraphs/compliance/src/seed.js';
import { toMinor } from '../../platform/money/money.js';

/** An amount written as decimal, in a currency's minor units. */
const money = (amount: number, currency = 'USD') => toMinor(amount, currency, 'amount');

let counter = 0;
function rule(fields: Partial<RestrictionDocument> & Pick<RestrictionDocument, 'isAllowed'>): RestrictionDocument {
  counter += 1;
  return {
    _id: `r${counter}`,
    restrictionId: `r${counter}`,
    SvcUserId: 'u1',
    restrictionName: fields.restrictionName ?? `rule${counter}`,
    description: null,
    txnTypes: ['*'],
    transactionCurrencies: ['USD'],
    fromAmount: null,
    toAmount: null,
    fromAmountCurrency: null,
    toAmountCurrency: null,
    isIgnoreRest: false,
    priority: 1,
    ...fields,
  };
}

const usd = (amount: number, txnType = 'USA'): TransactionProposal => ({
  txnType,
  amount: money(amount),
  currency: 'USD',
  sourceAccountType: 'checking',
  destinationAccountType: 'checking',
});
const type = (name: string) => TRANSACTION_TYPES.find((t) => t.name === name) ?? null;

const allowUpTo5000 = rule({
  restrictionName: 'allowUpTo5000',
  isAllowed: true,
  fromAmount: money(0),
  toAmount: money(5000),
  fromAmountCurrency: 'USD',
  toAmountCurrency: 'USD',
});
const refusePaypal = rule({
  restrictionName: 'refusePaypalOver500',
  isAllowed: false,
  txnTypes: ['paypal'],
  fromAmount: money(500.01),
  fromAmountCurrency: 'USD',
});
const ignoreRestTopUp = rule({
  restrictionName: 'topUpIgnoresRest',
  isAllowed: true,
  isIgnoreRest: true,
  priority: 0,
  txnTypes: ['tocard'],
  toAmount: money(20000),
  toAmountCurrency: 'USD',
});
const refuseAllP2 = rule({ restrictionName: 'refuseEverythingLater', isAllowed: false, priority: 2, transactionCurrencies: ['*'] });
const refuseAllP0 = rule({ restrictionName: 'refuseEverythingFirst', isAllowed: false, priority: 0, transactionCurrencies: ['*'] });
const eurOnly = rule({ restrictionName: 'eurOnly', isAllowed: true, transactionCurrencies: ['EUR'] });
const boundInEur = rule({ restrictionName: 'boundInEur', isAllowed: true, toAmount: money(100, 'EUR'), toAmountCurrency: 'EUR' });
const ignoreRestRefusal = rule({
  restrictionName: 'ignoreRestRefusal',
  isAllowed: false,
  isIgnoreRest: true,
  priority: 0,
  txnTypes: ['USA'],
});
const sameP_a = rule({ restrictionName: 'a_allow', isAllowed: true, priority: 1 });
const sameP_b = rule({ restrictionName: 'b_refuse', isAllowed: false, priority: 1 });

describe('the restriction engine', () => {
  it.each([
    ['an amount inside an allowing rule', usd(100), [allowUpTo5000], true, 'restriction', 'allowUpTo5000'],
    ['the upper bound itself (bounds are inclusive)', usd(5000), [allowUpTo5000], true, 'restriction', 'allowUpTo5000'],
    ['an amount above every allowing rule', usd(5000.01), [allowUpTo5000], false, 'default', null],
    ['no restrictions at all', usd(1), [], false, 'default', null],
    [
      'a refusing rule of the same priority after an allow',
      usd(600, 'paypal'),
      [allowUpTo5000, refusePaypal],
      false,
      'restriction',
      'refusePaypalOver500',
    ],
    [
      'a refusing rule that does not match the amount',
      usd(400, 'paypal'),
      [allowUpTo5000, refusePaypal],
      true,
      'restriction',
      'allowUpTo5000',
    ],
    [
      'an isIgnoreRest allow before a later refusal',
      { ...usd(15000, 'tocard'), destinationAccountType: 'card' },
      [ignoreRestTopUp, refuseAllP2, allowUpTo5000],
      true,
      'restriction',
      'topUpIgnoresRest',
    ],
    [
      'a later refusal without isIgnoreRest before it',
      usd(100),
      [allowUpTo5000, refuseAllP2],
      false,
      'restriction',
      'refuseEverythingLater',
    ],
    ['a refusal of lower priority number first', usd(100), [refuseAllP0, allowUpTo5000], false, 'restriction', 'refuseEverythingFirst'],
    ['an isIgnoreRest refusal', usd(100), [ignoreRestRefusal, allowUpTo5000], false, 'restriction', 'ignoreRestRefusal'],
    ['`*` types covering a type it does not name', usd(100, '1'), [allowUpTo5000], true, 'restriction', 'allowUpTo5000'],
    ['a currency the rule does not list', { ...usd(100, 'paypal'), currency: 'EUR' }, [allowUpTo5000], false, 'default', null],
    ['a currency the rule lists', { ...usd(100, 'paypal'), currency: 'EUR' }, [eurOnly], true, 'restriction', 'eurOnly'],
    ['a bound in another currency (no exchange rate)', usd(50), [boundInEur], false, 'default', null],
    [
      'equal priorities in name order: the refusal comes after the allow and still refuses',
      usd(100),
      [sameP_b, sameP_a],
      false,
      'restriction',
      'b_refuse',
    ],
  ] as const)('decides %s', (_name, proposal, restrictions, allowed, decidedBy, ruleName) => {
    const decision = evaluate(proposal, [], type(proposal.txnType), restrictions);
    expect(decision).toMatchObject({ allowed, decidedBy, rule: ruleName });
    expect(decision.reason).not.toBe('');
  });

  it('refuses by a procedural restriction before anything else', () => {
    const procedural: ProceduralRestrictionDocument[] = [
      { _id: 'p1', SvcUserId: 'u1', name: 'amlReview', reason: 'Under review.', dtsCreated: new Date() },
    ];
    expect(evaluate(usd(1), procedural, type('USA'), [allowUpTo5000])).toMatchObject({
      allowed: false,
      decidedBy: 'procedural',
      rule: 'amlReview',
    });
  });

  it.each([
    ['an unknown type', { ...usd(1), txnType: 'barter' }, 'barter'],
    ['a type that is not allowed', usd(1, 'cheque'), 'cheque'],
    ['a source account type the type does not list', { ...usd(1, 'USA_wire'), sourceAccountType: 'savings' }, 'USA_wire'],
    ['a destination account type the type does not list', { ...usd(1, 'tocard'), destinationAccountType: 'savings' }, 'tocard'],
    ['a currency the type does not allow', { ...usd(1, 'USA'), currency: 'EUR' }, 'USA'],
  ])('refuses by the transaction type: %s', (_name, proposal, ruleName) => {
    expect(evaluate(proposal, [], type(proposal.txnType), [allowUpTo5000])).toMatchObject({
      allowed: false,
      decidedBy: 'transactionType',
      rule: ruleName,
    });
  });
});
