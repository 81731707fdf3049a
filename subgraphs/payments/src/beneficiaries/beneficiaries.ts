import type { Db } from 'mongodb';
import { appError, ErrorCode } from '../../../../platform/contracts/errors.js';
import { newId } from '../../../../platform/security/secrets.js';
import { checkString, CURRENCY_RULE, ID_RULE, ROUTING_NUMBER_RULE, type StringRule } from '../../../../platform/security/validate.js';
import { canonicalDecimal, checkAmount, fromMinor, HOME_CURRENCY, minorDigits } from '../../../../platform/money/money.js';
import {
  beneficiariesCollection,
  beneficiaryUndosCollection,
  type BeneficiaryDocument,
  type BeneficiaryState,
  type UndoDocument,
} from './datasource.js';
import { isOwnKey, ownValue } from '../../../../platform/contracts/own.js';

/** How long an undo stays actionable. */
const UNDO_SECONDS = 300;

const TEXT: StringRule = { max: 200, safeText: true };
/** String properties and their rules; each is stored as sent (trimmed of nothing) or null. */
const STRING_RULES: Record<string, StringRule> = {
  name: { min: 1, ...TEXT },
  defaultCurrency: CURRENCY_RULE,
  status: { max: 50, safeText: true },
  paypalId: { max: 254, safeText: true },
  bankName: TEXT,
  routingNumber: ROUTING_NUMBER_RULE,
  bic: { pattern: /^[A-Z]{6}[A-Z0-9]{2}([A-Z0-9]{3})?$/, patternText: 'a BIC of 8 or 11 characters' },
  destinationName: TEXT,
  destinationFirstName: TEXT,
  destinationLastName: TEXT,
  type: { max: 50, safeText: true },
  typeName: { max: 100, safeText: true },
  txnType: { max: 50, safeText: true },
  narrativeCredit: TEXT,
  narrativeDebit: TEXT,
  expiryMM: { pattern: /^(0[1-9]|1[0-2])$/, patternText: 'a month written MM (01-12)' },
  expiryYY: { pattern: /^\d{2}$/, patternText: 'a year written YY' },
  defaultSourceAccountId: ID_RULE,
  SvcPayeeId: ID_RULE,
};
const BOOLEANS = ['isActive', 'isHidden', 'isFavourite'] as const;
/** Numbers the spec keeps only masked: the last four are stored, nothing else. */
const MASKED = {
  accountNumber: { stored: 'accountNumberLastFour', pattern: /^[A-Za-z0-9]{4,34}$/, text: '4-34 letters or digits' },
  destinationPAN: { stored: 'destinationPANLastFour', pattern: /^\d{12,19}$/, text: '12-19 digits' },
} as const;

/** The beneficiary's default amount as decimal text, or null. */
export function defaultAmountOf(beneficiary: Pick<BeneficiaryDocument, 'defaultAmount' | 'defaultCurrency'>): string | null {
  // A stored document may lack a member that is null.
  const amount = beneficiary.defaultAmount ?? null;
  return amount === null ? null : fromMinor(amount, beneficiary.defaultCurrency ?? HOME_CURRENCY);
}

/** What a BeneficiaryInput changes: the stored properties, and the default amount as decimal text until its currency is known. */
export interface BeneficiaryChanges {
  state: Partial<BeneficiaryState>;
  defaultAmount?: string | null;
}

/** Validates a BeneficiaryInput into the properties it changes; nothing is stored unless every property is valid. */
function beneficiaryChanges(input: Record<string, unknown>): BeneficiaryChanges {
  const changes: Record<string, unknown> = {};
  let defaultAmount: string | null | undefined;
  for (const [field, value] of Object.entries(input)) {
    if (value === undefined) continue;
    const rule = ownValue(STRING_RULES, field);
    if (rule) changes[field] = checkString(value, field, rule) ?? null;
    else if ((BOOLEANS as readonly string[]).includes(field)) {
      // Booleans a beneficiary always has: null means "no change" (isHidden may be null).
      if (value !== null) changes[field] = value;
      else if (field === 'isHidden') changes[field] = null;
    } else if (field === 'defaultAmount') {
      const decimal = value === null ? null : canonicalDecimal(value);
      if (value !== null && (decimal === null || decimal.startsWith('-')))
        throw appError(ErrorCode.VALIDATION_FAILED, 'defaultAmount must be a decimal amount from 0.', { field });
      defaultAmount = decimal;
    } else if (field === 'iban') {
      // An IBAN holds the full account number: only its country and last four are kept.
      const iban = checkString(value, field, { pattern: /^[A-Z]{2}\d{2}[A-Z0-9]{11,30}$/, patternText: 'an IBAN without spaces' });
      changes.iban = iban ? `${iban.slice(0, 2)}** **** ${iban.slice(-4)}` : null;
    } else if (isOwnKey(MASKED, field)) {
      const masked = MASKED[field];
      const text = checkString(value, field, { pattern: masked.pattern, patternText: masked.text });
      changes[masked.stored] = text ? text.slice(-4) : null;
    }
  }
  return { state: changes, ...(defaultAmount !== undefined ? { defaultAmount } : {}) };
}

/**
 * The stored properties of a change, the default amount in minor units of the currency it will
 * have. A change of currency alone keeps the amount's value, in the new currency's units.
 */
function stateOf(
  changes: BeneficiaryChanges,
  current: Pick<BeneficiaryDocument, 'defaultAmount' | 'defaultCurrency'> | null,
): Partial<BeneficiaryState> {
  const state = { ...changes.state };
  const currency = (state.defaultCurrency !== undefined ? state.defaultCurrency : current?.defaultCurrency) ?? HOME_CURRENCY;
  if (changes.defaultAmount !== undefined) {
    state.defaultAmount =
      changes.defaultAmount === null ? null : checkAmount(changes.defaultAmount, currency, 'defaultAmount', { zero: true });
  } else if (current?.defaultAmount != null && state.defaultCurrency !== undefined) {
    const before = current.defaultCurrency ?? HOME_CURRENCY;
    if (minorDigits(before) !== minorDigits(currency)) {
      const amount = fromMinor(current.defaultAmount, before);
      const places = amount.split('.')[1]?.replace(/0+$/, '').length ?? 0;
      if (places > minorDigits(currency)) {
        throw appError(
          ErrorCode.VALIDATION_FAILED,
          `defaultCurrency: the default amount ${amount} has more decimal places than ${currency}'s minor unit; send a defaultAmount with it.`,
          { field: 'defaultCurrency' },
        );
      }
      state.defaultAmount = checkAmount(amount, currency, 'defaultAmount', { zero: true });
    }
  }
  return state;
}

/** Beneficiaries of end users: create, modify and delete, each modification undoable once for UNDO_SECONDS. */
export class Beneficiaries {
  constructor(private readonly db: Db) {}

  private async own(SvcUserId: string, SvcBeneficiaryId: string): Promise<BeneficiaryDocument> {
    const beneficiary = await beneficiariesCollection(this.db).findOne({ _id: SvcBeneficiaryId });
    // Another user's beneficiary answers as if it did not exist.
    if (!beneficiary || beneficiary.SvcUserId !== SvcUserId)
      throw appError(ErrorCode.NOT_FOUND, `Beneficiary ${SvcBeneficiaryId} does not exist.`, { field: 'SvcBeneficiaryId' });
    return beneficiary;
  }

  async create(SvcUserId: string, input: Record<string, unknown>): Promise<BeneficiaryDocument> {
    const changes = stateOf(beneficiaryChanges(input), null);
    if (!changes.name) throw appError(ErrorCode.REQUIRED_ELEMENT_MISSING, 'name is required.', { field: 'name' });
    const id = newId('ben_');
    const now = new Date();
    const doc: BeneficiaryDocument = {
      _id: id,
      SvcBeneficiaryId: id,
      SvcUserId,
      name: null,
      defaultAmount: null,
      defaultCurrency: null,
      status: null,
      isActive: true,
      isHidden: null,
      isFavourite: false,
      isDeleted: false,
      paypalId: null,
      bankName: null,
      accountNumberLastFour: null,
      routingNumber: null,
      bic: null,
      iban: null,
      destinationName: null,
      destinationFirstName: null,
      destinationLastName: null,
      destinationPANLastFour: null,
      expiryMM: null,
      expiryYY: null,
      type: null,
      typeName: null,
      txnType: null,
      narrativeCredit: null,
      narrativeDebit: null,
      defaultSourceAccountId: null,
      SvcPayeeId: null,
      ...changes,
      dtsCreated: now,
      dtsModified: now,
    };
    await beneficiariesCollection(this.db).insertOne(doc);
    return doc;
  }

  async modify(SvcUserId: string, SvcBeneficiaryId: string, input: Record<string, unknown>) {
    const changes = beneficiaryChanges(input);
    if (Object.keys(changes.state).length > 0 || changes.defaultAmount !== undefined)
      return this.change(SvcUserId, SvcBeneficiaryId, changes);
    // Nothing to change: nothing is written, and the answer's undo is not actionable (it would undo nothing).
    const beneficiary = await this.own(SvcUserId, SvcBeneficiaryId);
    const now = new Date();
    const undo: UndoDocument = {
      _id: newId('undo_'),
      SvcBeneficiaryId,
      SvcUserId,
      previous: {},
      dtsModifiedBefore: beneficiary.dtsModified,
      dtsModifiedAfter: beneficiary.dtsModified,
      dtsQueued: now,
      dtsExpiry: now,
      dtsUsed: now,
    };
    return { success: true, beneficiary, undo };
  }

  delete(SvcUserId: string, SvcBeneficiaryId: string) {
    return this.change(SvcUserId, SvcBeneficiaryId, { state: { isDeleted: true } });
  }

  /**
   * Applies changes and records their undo. The update is conditional on the dtsModified read,
   * so the undo holds exactly the values this change replaced, even when two changes race.
   */
  private async change(SvcUserId: string, SvcBeneficiaryId: string, requested: BeneficiaryChanges) {
    const beneficiaries = beneficiariesCollection(this.db);
    for (let attempt = 0; attempt < 5; attempt += 1) {
      const current = await this.own(SvcUserId, SvcBeneficiaryId);
      const changes = stateOf(requested, current);
      const previous = Object.fromEntries(
        Object.keys(changes).map((key) => [key, current[key as keyof BeneficiaryState] ?? null]),
      ) as Partial<BeneficiaryState>;
      const now = new Date(Math.max(Date.now(), current.dtsModified.getTime() + 1));
      const updated = await beneficiaries.findOneAndUpdate(
        { _id: SvcBeneficiaryId, dtsModified: current.dtsModified },
        { $set: { ...changes, dtsModified: now } },
        { returnDocument: 'after' },
      );
      if (!updated) continue;
      const undo: UndoDocument = {
        _id: newId('undo_'),
        SvcBeneficiaryId,
        SvcUserId,
        previous,
        dtsModifiedBefore: current.dtsModified,
        dtsModifiedAfter: now,
        dtsQueued: now,
        dtsExpiry: new Date(now.getTime() + UNDO_SECONDS * 1000),
        dtsUsed: null,
      };
      await beneficiaryUndosCollection(this.db).insertOne(undo);
      return { success: true, beneficiary: updated, undo };
    }
    throw appError(ErrorCode.CONFLICT, 'The beneficiary is being changed by another request; try again.', { field: 'SvcBeneficiaryId' });
  }

  /**
   * Undoes one modification: the undo is claimed atomically (once, before its expiry), then the
   * replaced values are restored only if the beneficiary was not modified since; otherwise the
   * claim is released and the undo answers CONFLICT. Changes undo last-first, like an editor's.
   */
  async undo(SvcUserId: string, SvcBeneficiaryId: string, undoId: string) {
    const undos = beneficiaryUndosCollection(this.db);
    const undo = await undos.findOne({ _id: undoId });
    if (!undo || undo.SvcUserId !== SvcUserId || undo.SvcBeneficiaryId !== SvcBeneficiaryId)
      throw appError(ErrorCode.NOT_FOUND, `Undo ${undoId} does not exist.`, { field: 'undoId' });
    const now = new Date();
    const claimed = await undos.findOneAndUpdate(
      { _id: undoId, dtsUsed: null, dtsExpiry: { $gt: now } },
      { $set: { dtsUsed: now } },
      { returnDocument: 'after' },
    );
    if (!claimed)
      throw appError(ErrorCode.CONFLICT, undo.dtsUsed ? 'This change was undone already.' : 'The undo has expired.', { field: 'undoId' });
    // The beneficiary returns to its state before the change, dtsModified included, so the undo of
    // an earlier change that this one overtook becomes actionable again.
    const restored = await beneficiariesCollection(this.db).findOneAndUpdate(
      { _id: SvcBeneficiaryId, dtsModified: undo.dtsModifiedAfter },
      { $set: { ...undo.previous, dtsModified: undo.dtsModifiedBefore } },
      { returnDocument: 'after' },
    );
    if (!restored) {
      await undos.updateOne({ _id: undoId }, { $set: { dtsUsed: null } });
      throw appError(ErrorCode.CONFLICT, 'The beneficiary was modified after this change; undo the later change first.', {
        field: 'undoId',
      });
    }
    return { success: true, beneficiary: restored, undo: claimed };
  }

  /** Whether an undo can still be used: not used, not expired, and its change still the latest. */
  async isActionable(undo: UndoDocument, now = new Date()): Promise<boolean> {
    if (undo.dtsUsed || undo.dtsExpiry <= now) return false;
    const beneficiary = await beneficiariesCollection(this.db).findOne({ _id: undo.SvcBeneficiaryId }, { projection: { dtsModified: 1 } });
    return beneficiary?.dtsModified.getTime() === undo.dtsModifiedAfter.getTime();
  }
}
