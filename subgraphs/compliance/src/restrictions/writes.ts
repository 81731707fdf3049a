import { MongoServerError, type Db } from 'mongodb';
import { COMPLIANCE_LIST_CAPS } from '../list-caps.js';
import { appError, ErrorCode } from '../../../../platform/contracts/errors.js';
import { parseGlobalId } from '../../../../platform/graphql/global-id.js';
import { recordEvent } from '../../../../platform/messaging/outbox.js';
import { checkAmount, isCurrencyCode, type MinorUnits } from '../../../../platform/money/money.js';
import type { AuditTrail } from '../../../../platform/messaging/audit.js';
import { newId } from '../../../../platform/security/secrets.js';
import { checkString, ID_RULE, type StringRule } from '../../../../platform/security/validate.js';
import type { ProceduralRestrictionInput, RestrictionInput } from '../__generated__/schema-types.js';
import {
  proceduralRestrictionsCollection,
  restrictionsCollection,
  type ProceduralRestrictionDocument,
  type RestrictionDocument,
  type TransactionTypeDocument,
} from './datasource.js';

/** The type name of a procedural restriction's global id (ProceduralRestriction.id). */
export const PROCEDURAL_RESTRICTION = 'ProceduralRestriction';

/** Free text a refusal's reason may show: no `<` or `>`, and not only whitespace. */
const text = (max: number): StringRule => ({ min: 1, max, safeText: true });
const NO_ANGLES: StringRule = { max: 500, pattern: /^[^<>]*$/, patternText: 'free of < and >' };
/** A bound list longer than this is a mistake, not a rule. */
const MAX_LIST = Math.min(
  COMPLIANCE_LIST_CAPS['RestrictionInput.transactionCurrencies'],
  COMPLIANCE_LIST_CAPS['RestrictionInput.txnTypes'],
);

const invalid = (field: string, message: string) => appError(ErrorCode.VALIDATION_FAILED, message, { field });

/** Checks a list of names against the allowed ones or `*`, naming the first wrong item. */
function checkList(values: readonly string[], field: string, allowed: (value: string) => boolean, what: string): string[] {
  if (values.length > MAX_LIST) throw invalid(field, `${field} holds at most ${MAX_LIST} values.`);
  values.forEach((value, index) => {
    if (value !== '*' && !allowed(value)) throw invalid(`${field}[${index}]`, `${field}[${index}] must be ${what} or *.`);
  });
  return [...values];
}

/** A bound and its currency: both or neither. */
function checkBound(
  amount: string | null | undefined,
  currency: string | null | undefined,
  side: 'from' | 'to',
): { amount: MinorUnits | null; currency: string | null } {
  const amountField = `${side}Amount`;
  const currencyField = `${side}AmountCurrency`;
  if (amount === null || amount === undefined) {
    if (currency !== null && currency !== undefined) throw invalid(currencyField, `${currencyField} is given only with ${amountField}.`);
    return { amount: null, currency: null };
  }
  if (currency === null || currency === undefined) throw invalid(currencyField, `${amountField} needs its currency, ${currencyField}.`);
  if (!isCurrencyCode(currency)) throw invalid(currencyField, `${currencyField} must be an ISO 4217 currency code.`);
  return { amount: checkAmount(amount, currency, amountField, { zero: true }), currency };
}

/**
 * A restriction input as the document it stores, or VALIDATION_FAILED naming the first wrong
 * field: what the engine reads must be what the operator meant, so nothing is dropped or rounded.
 */
function checkRestrictionInput(input: RestrictionInput, types: readonly TransactionTypeDocument[]): RestrictionDocument {
  const restrictionId = checkString(input.restrictionId, 'restrictionId', ID_RULE)!;
  const SvcUserId = checkString(input.SvcUserId ?? null, 'SvcUserId', ID_RULE) ?? null;
  const restrictionName = checkString(input.restrictionName, 'restrictionName', text(100))!;
  const description = checkString(input.description ?? null, 'description', NO_ANGLES) ?? null;
  const typeNames = new Set(types.map((type) => type.name));
  const txnTypes = checkList(input.txnTypes, 'txnTypes', (name) => typeNames.has(name), 'a transaction type name (Query.transactionTypes)');
  const transactionCurrencies = checkList(
    input.transactionCurrencies,
    'transactionCurrencies',
    isCurrencyCode,
    'an ISO 4217 currency code',
  );
  const from = checkBound(input.fromAmount, input.fromAmountCurrency, 'from');
  const to = checkBound(input.toAmount, input.toAmountCurrency, 'to');
  if (from.amount !== null && to.amount !== null) {
    // Bounds in two currencies would match no transaction: no exchange rate is applied.
    if (from.currency !== to.currency)
      throw invalid('toAmountCurrency', 'toAmountCurrency must be fromAmountCurrency where both bounds are given.');
    if (from.amount > to.amount) throw invalid('toAmount', 'toAmount must be at least fromAmount.');
  }
  if (!Number.isInteger(input.priority) || input.priority < 0) throw invalid('priority', 'priority must be an integer from 0.');
  return {
    _id: restrictionId,
    restrictionId,
    SvcUserId,
    restrictionName,
    description,
    txnTypes,
    transactionCurrencies,
    fromAmount: from.amount,
    toAmount: to.amount,
    fromAmountCurrency: from.currency,
    toAmountCurrency: to.currency,
    isAllowed: input.isAllowed,
    isIgnoreRest: input.isIgnoreRest,
    priority: input.priority,
  };
}

/**
 * The operators' writes of restrictions and procedural restrictions. Each write that changes
 * something is followed at once by a `restrictions.changed` event in the outbox (which the bus
 * carries to read models such as card authorization's) and an audit record, as the acting
 * operator.
 */
export class RestrictionWrites {
  constructor(
    private readonly db: Db,
    private readonly audit: AuditTrail,
    private readonly transactionTypes: () => Promise<TransactionTypeDocument[]>,
  ) {}

  /** Creates or replaces a restriction; one of another user (or default) is refused, naming SvcUserId. */
  async set(input: RestrictionInput): Promise<RestrictionDocument> {
    const restriction = checkRestrictionInput(input, await this.transactionTypes());
    const { _id, SvcUserId } = restriction;
    const restrictions = restrictionsCollection(this.db);
    const existing = await restrictions.findOne({ _id });
    if (existing && (existing.SvcUserId ?? null) !== SvcUserId) throw this.notMoved();
    try {
      // Matched on the owner too, so that a concurrent write for another owner fails on the key instead of moving it.
      await restrictions.replaceOne({ _id, SvcUserId }, restriction, { upsert: true });
    } catch (error) {
      if (!(error instanceof MongoServerError && error.code === 11000)) throw error;
      throw this.notMoved();
    }
    await this.changed(SvcUserId);
    await this.audit.record(
      'RESTRICTION_SET',
      { type: 'restriction', id: _id },
      { SvcUserId, restrictionName: restriction.restrictionName, created: existing === null },
    );
    return restriction;
  }

  /** Removes a restriction; true when there was one. */
  async remove(restrictionId: string): Promise<boolean> {
    checkString(restrictionId, 'restrictionId', { min: 1, max: 200 });
    const removed = await restrictionsCollection(this.db).findOneAndDelete({ _id: restrictionId });
    if (!removed) return false;
    const SvcUserId = removed.SvcUserId ?? null;
    await this.changed(SvcUserId);
    await this.audit.record(
      'RESTRICTION_REMOVED',
      { type: 'restriction', id: restrictionId },
      { SvcUserId, restrictionName: removed.restrictionName },
    );
    return true;
  }

  /** Places a procedural restriction on a user. */
  async placeProcedural(input: ProceduralRestrictionInput): Promise<ProceduralRestrictionDocument> {
    const placed: ProceduralRestrictionDocument = {
      _id: newId('prc_'),
      SvcUserId: checkString(input.SvcUserId, 'SvcUserId', ID_RULE)!,
      name: checkString(input.name, 'name', text(60))!,
      reason: checkString(input.reason, 'reason', text(500))!,
      dtsCreated: new Date(),
    };
    await proceduralRestrictionsCollection(this.db).insertOne(placed);
    await this.changed(placed.SvcUserId);
    await this.audit.record(
      'PROCEDURAL_RESTRICTION_PLACED',
      { type: 'proceduralRestriction', id: placed._id },
      { SvcUserId: placed.SvcUserId, name: placed.name },
    );
    return placed;
  }

  /** Lifts a procedural restriction by its global id; true when there was one. */
  async liftProcedural(id: string): Promise<boolean> {
    const parsed = parseGlobalId(id);
    if (parsed?.type !== PROCEDURAL_RESTRICTION)
      throw invalid('id', `id must be a ProceduralRestriction id (${PROCEDURAL_RESTRICTION}:<key>).`);
    const lifted = await proceduralRestrictionsCollection(this.db).findOneAndDelete({ _id: parsed.key });
    if (!lifted) return false;
    await this.changed(lifted.SvcUserId);
    await this.audit.record(
      'PROCEDURAL_RESTRICTION_LIFTED',
      { type: 'proceduralRestriction', id: lifted._id },
      { SvcUserId: lifted.SvcUserId, name: lifted.name },
    );
    return true;
  }

  /** The event of a change: a user's rules, or (null) the defaults. */
  private changed(SvcUserId: string | null): Promise<void> {
    return recordEvent(this.db, 'restrictions.changed', SvcUserId === null ? {} : { SvcUserId }, { SvcUserId });
  }

  private notMoved(): Error {
    return invalid(
      'SvcUserId',
      'restrictionId belongs to another user or to the platform defaults; a restriction is not moved: remove it and set a new one.',
    );
  }
}
