import type { Db } from 'mongodb';
import { appError, ErrorCode } from '../../../../platform/contracts/errors.js';
import type { GraphClient } from '../../../../platform/contracts/graph.js';
import { newId } from '../../../../platform/security/secrets.js';
import { checkString, ID_RULE, required } from '../../../../platform/security/validate.js';
import { checkAmount, isCurrencyCode, negate, type MinorUnits } from '../../../../platform/money/money.js';
import { iouAccountsCollection, iouTransactionsCollection, type IouAccountDocument, type IouTransactionDocument } from './datasource.js';

const USER_EXISTS = 'query ($id: ID!) { user(SvcUserId: $id) { SvcUserId } }';
const NARRATIVE = { max: 200, safeText: true } as const;

/** An IOU transaction's amount as one party reads it: negative from the debtor's side of it. */
export function amountFor(viewer: string, transaction: IouTransactionDocument): MinorUnits {
  return viewer === transaction.lenderSvcUserId ? transaction.lent : negate(transaction.lent);
}

/** IOUs between end users: one account per lender and borrower, transactions pending until the other party accepts. */
export class Ious {
  constructor(
    private readonly db: Db,
    private readonly graph: GraphClient,
  ) {}

  /** The accounts in which `debtor` owes `creditor`, with their transactions. */
  async for(debtor: string, creditor: string): Promise<IouAccountDocument[]> {
    checkString(creditor, 'SvcUserId', ID_RULE);
    return iouAccountsCollection(this.db).find({ SvcUserId: creditor, otherSvcUserId: debtor }).sort({ dtsModified: -1, _id: 1 }).toArray();
  }

  async record(
    SvcUserId: string,
    input: {
      otherSvcUserId?: string | null;
      kind?: string | null;
      amount?: string | null;
      currency?: string | null;
      narrative?: string | null;
      narrativeDebit?: string | null;
      narrativeCredit?: string | null;
      attachments?: Record<string, unknown> | null;
    },
  ) {
    const other = checkString(required(input.otherSvcUserId, 'otherSvcUserId'), 'otherSvcUserId', ID_RULE)!;
    if (other === SvcUserId)
      throw appError(ErrorCode.VALIDATION_FAILED, 'otherSvcUserId must be another user.', { field: 'otherSvcUserId' });
    const kind = required(input.kind, 'kind');
    if (kind !== 'loan' && kind !== 'repayment')
      throw appError(ErrorCode.VALIDATION_FAILED, 'kind must be loan or repayment.', { field: 'kind' });
    const currency = checkString(required(input.currency, 'currency'), 'currency', {
      pattern: /^[A-Z]{3}$/,
      patternText: 'a 3-letter ISO 4217 code',
    })!;
    if (!isCurrencyCode(currency))
      throw appError(ErrorCode.VALIDATION_FAILED, 'currency must be an ISO 4217 currency code in use.', { field: 'currency' });
    const amount = checkAmount(required(input.amount, 'amount'), currency, 'amount', { max: '1000000' });
    const narrative = checkString(input.narrative, 'narrative', NARRATIVE) ?? null;
    const narrativeDebit = checkString(input.narrativeDebit, 'narrativeDebit', NARRATIVE) ?? null;
    const narrativeCredit = checkString(input.narrativeCredit, 'narrativeCredit', NARRATIVE) ?? null;
    if (input.attachments && JSON.stringify(input.attachments).length > 4096)
      throw appError(ErrorCode.VALIDATION_FAILED, 'attachments must be at most 4 KB of JSON.', { field: 'attachments' });
    const { user } = await this.graph.request<{ user: { SvcUserId: string } | null }>(USER_EXISTS, { id: other });
    if (!user) throw appError(ErrorCode.NOT_FOUND, `User ${other} does not exist.`, { field: 'otherSvcUserId' });

    // A loan: the caller lends. A repayment: the caller is the borrower paying back.
    const lender = kind === 'loan' ? SvcUserId : other;
    const borrower = kind === 'loan' ? other : SvcUserId;
    const now = new Date();
    const accounts = iouAccountsCollection(this.db);
    // One account per lender, borrower and currency; its id is derived, so racing first records share it.
    const accountId = `iou_${lender}_${borrower}_${currency}`;
    await accounts.updateOne(
      { _id: accountId },
      { $setOnInsert: { IOUAccountId: accountId, SvcUserId: lender, otherSvcUserId: borrower, currency }, $set: { dtsModified: now } },
      { upsert: true },
    );
    const id = newId('ioutx_');
    const transaction: IouTransactionDocument = {
      _id: id,
      IOUTransactionId: id,
      IOUAccountId: accountId,
      borrowerSvcUserId: borrower,
      lenderSvcUserId: lender,
      lent: kind === 'loan' ? amount : negate(amount),
      currency,
      narrativeDebit,
      narrativeCredit,
      narrative,
      dts: now,
      isPending: true,
      isActive: true,
      attachments: input.attachments ?? null,
      images: [],
      recordedBySvcUserId: SvcUserId,
    };
    await iouTransactionsCollection(this.db).insertOne(transaction);
    return transaction;
  }

  /** Accepts (the other party) or cancels (the recorder) a pending transaction; one conditional update each, so only one can win. */
  async settle(SvcUserId: string, IOUTransactionId: string, action: 'accept' | 'cancel') {
    const transactions = iouTransactionsCollection(this.db);
    const existing = await transactions.findOne({ _id: IOUTransactionId });
    const party = existing && (existing.lenderSvcUserId === SvcUserId || existing.borrowerSvcUserId === SvcUserId);
    if (!existing || !party)
      throw appError(ErrorCode.NOT_FOUND, `IOU transaction ${IOUTransactionId} does not exist.`, { field: 'IOUTransactionId' });
    const mine = existing.recordedBySvcUserId === SvcUserId;
    if (action === 'accept' && mine)
      throw appError(ErrorCode.FORBIDDEN, 'Only the other party can accept an IOU transaction.', { field: 'IOUTransactionId' });
    if (action === 'cancel' && !mine)
      throw appError(ErrorCode.FORBIDDEN, 'Only the party who recorded an IOU transaction can cancel it.', { field: 'IOUTransactionId' });
    const updated = await transactions.findOneAndUpdate(
      { _id: IOUTransactionId, isPending: true, isActive: true },
      { $set: action === 'accept' ? { isPending: false } : { isActive: false } },
      { returnDocument: 'after' },
    );
    if (!updated) throw appError(ErrorCode.CONFLICT, 'The IOU transaction is no longer pending.', { field: 'IOUTransactionId' });
    await iouAccountsCollection(this.db).updateOne({ _id: existing.IOUAccountId }, { $set: { dtsModified: new Date() } });
    return updated;
  }
}
