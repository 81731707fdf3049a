import type { MinorUnits } from '../money/money.js';

/** A rule that allows or refuses a user's transactions, or a platform default (SvcUserId null) for users without their own. */
export interface RestrictionDocument {
  _id: string;
  restrictionId: string;
  SvcUserId: string | null;
  restrictionName: string;
  description: string | null;
  txnTypes: string[];
  transactionCurrencies: string[];
  /** Bounds in the minor units of their currencies; a bound always has its currency. */
  fromAmount: MinorUnits | null;
  toAmount: MinorUnits | null;
  fromAmountCurrency: string | null;
  toAmountCurrency: string | null;
  isAllowed: boolean;
  isIgnoreRest: boolean;
  priority: number;
}

/** A transaction type of the platform and what it allows. `_id` is the type name. */
export interface TransactionTypeDocument {
  _id: string;
  name: string;
  isAllowed: boolean;
  sourceAccountTypes: string[];
  destinationAccountTypes: string[] | null;
  allowedTransactionCurrencies: string[];
}

/** A procedural restriction on a user (an AML review, a dormant account...): while it stands, every transaction is refused. */
export interface ProceduralRestrictionDocument {
  _id: string;
  SvcUserId: string;
  name: string;
  reason: string;
  dtsCreated: Date;
}

/** A transaction to decide on. */
export interface TransactionProposal {
  txnType: string;
  /** In `currency`'s minor units. */
  amount: MinorUnits;
  currency: string;
  sourceAccountType: string;
  destinationAccountType?: string | null;
}

/** The decision and what made it. */
export interface RestrictionDecision {
  allowed: boolean;
  decidedBy: 'procedural' | 'transactionType' | 'restriction' | 'default';
  rule: string | null;
  restriction: RestrictionDocument | null;
  reason: string;
}

/** Whether a list holds the value or `*`; an empty list holds nothing (fail closed). */
const listed = (list: readonly string[], value: string) => list.includes('*') || list.includes(value);

/** Whether a restriction covers the transaction: its type, currency and amount bounds. */
function matches(restriction: RestrictionDocument, proposal: TransactionProposal): boolean {
  if (!restriction.txnTypes.includes('*') && !restriction.txnTypes.includes(proposal.txnType)) return false;
  if (!listed(restriction.transactionCurrencies, proposal.currency)) return false;
  // A stored document may lack a bound that is null; a bound always carries its currency.
  const from = restriction.fromAmount ?? null;
  const to = restriction.toAmount ?? null;
  // No exchange rate is applied: a bound in another currency does not match.
  if (from !== null && (restriction.fromAmountCurrency !== proposal.currency || proposal.amount < from)) return false;
  if (to !== null && (restriction.toAmountCurrency !== proposal.currency || proposal.amount > to)) return false;
  return true;
}

/** The restrictions that apply to a user: their own, or the platform defaults where they have none. */
export function effectiveRestrictions<T extends RestrictionDocument>(own: readonly T[], defaults: readonly T[]): readonly T[] {
  return own.length > 0 ? own : defaults;
}

/** The evaluation order: ascending priority, then restrictionName, then id (stable). */
export function inEvaluationOrder(restrictions: readonly RestrictionDocument[]): RestrictionDocument[] {
  return [...restrictions].sort(
    (a, b) => a.priority - b.priority || a.restrictionName.localeCompare(b.restrictionName) || a._id.localeCompare(b._id),
  );
}

/**
 * Decides a transaction: procedural restrictions, then the transaction type, then the
 * restrictions in evaluation order (see the schema's Query.evaluateTransaction for the rule).
 */
export function evaluate(
  proposal: TransactionProposal,
  procedural: readonly ProceduralRestrictionDocument[],
  type: TransactionTypeDocument | null,
  restrictions: readonly RestrictionDocument[],
): RestrictionDecision {
  const refuse = (
    decidedBy: RestrictionDecision['decidedBy'],
    rule: string | null,
    reason: string,
    restriction: RestrictionDocument | null = null,
  ): RestrictionDecision => ({ allowed: false, decidedBy, rule, restriction, reason });
  const [blocking] = procedural;
  if (blocking) return refuse('procedural', blocking.name, `Procedural restriction ${blocking.name}: ${blocking.reason}`);
  if (!type) return refuse('transactionType', proposal.txnType, `Transaction type ${proposal.txnType} is not known.`);
  if (!type.isAllowed) return refuse('transactionType', type.name, `Transaction type ${type.name} is not allowed.`);
  if (!type.sourceAccountTypes.includes(proposal.sourceAccountType)) {
    return refuse('transactionType', type.name, `${type.name} transactions cannot be made from a ${proposal.sourceAccountType} account.`);
  }
  if (
    type.destinationAccountTypes &&
    type.destinationAccountTypes.length > 0 &&
    !type.destinationAccountTypes.includes(proposal.destinationAccountType ?? '')
  ) {
    return refuse(
      'transactionType',
      type.name,
      `${type.name} transactions cannot go to a ${proposal.destinationAccountType ?? 'unspecified'} account.`,
    );
  }
  if (!listed(type.allowedTransactionCurrencies, proposal.currency)) {
    return refuse('transactionType', type.name, `${type.name} transactions cannot be made in ${proposal.currency}.`);
  }
  let allowedBy: RestrictionDocument | null = null;
  for (const restriction of inEvaluationOrder(restrictions)) {
    if (!matches(restriction, proposal)) continue;
    if (restriction.isIgnoreRest) {
      return restriction.isAllowed
        ? {
            allowed: true,
            decidedBy: 'restriction',
            rule: restriction.restrictionName,
            restriction,
            reason: `Allowed by ${restriction.restrictionName}, which ignores the rest.`,
          }
        : refuse('restriction', restriction.restrictionName, `Refused by ${restriction.restrictionName}.`, restriction);
    }
    if (!restriction.isAllowed)
      return refuse('restriction', restriction.restrictionName, `Refused by ${restriction.restrictionName}.`, restriction);
    allowedBy ??= restriction;
  }
  if (allowedBy)
    return {
      allowed: true,
      decidedBy: 'restriction',
      rule: allowedBy.restrictionName,
      restriction: allowedBy,
      reason: `Allowed by ${allowedBy.restrictionName}.`,
    };
  return refuse('default', null, 'No restriction allows this transaction.');
}
