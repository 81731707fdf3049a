import { randomInt } from 'node:crypto';
import { MongoServerError, type Db } from 'mongodb';
import { appError, ErrorCode } from '../../../../platform/graphql/errors.js';
import { checkAmount, isCurrencyCode, negate, ZERO } from '../../../../platform/money/money.js';
import { maskLastFour } from '../../../../platform/security/masking.js';
import { newId } from '../../../../platform/security/secrets.js';
import { accountsCollection } from './datasource.js';
import { accountMonth, transactionsCollection, type TransactionDocument } from './transactions-datasource.js';

/** The routing number of the accounts this bank opens. */
export const BANK_ROUTING_NUMBER = '026009593';

/** Records the transaction of an approved card message once (its id derives from the messageId) and moves the balance. */
export async function recordCardTransaction(db: Db, input: { messageId: string; SvcAccountId: string; SvcUserId: string; SvcCardId: string; direction: string; amount: string; currency: string; narrative?: string | null; reference?: string | null }): Promise<TransactionDocument> {
  if (input.direction !== 'debit' && input.direction !== 'credit') throw appError(ErrorCode.VALIDATION_FAILED, 'direction must be debit or credit.', { field: 'direction' });
  const amount = checkAmount(input.amount, input.currency, 'amount');
  const account = await accountsCollection(db).findOne({ _id: input.SvcAccountId, SvcUserId: input.SvcUserId });
  if (!account) throw appError(ErrorCode.NOT_FOUND, `No account ${input.SvcAccountId} of the card's user.`, { field: 'SvcAccountId' });
  if (account.currency !== input.currency) throw appError(ErrorCode.VALIDATION_FAILED, `The account is in ${account.currency}, not ${input.currency}.`, { field: 'currency' });
  const transactions = transactionsCollection(db);
  const id = `txn_${input.messageId}`;
  const now = new Date();
  const debit = input.direction === 'debit';
  const doc: TransactionDocument = {
    _id: id, transactionId: id, SvcAccountId: input.SvcAccountId, SvcUserId: input.SvcUserId, SvcCardId: input.SvcCardId,
    transactionIdBO: null, debitTransactionId: debit ? id : null, creditTransactionId: debit ? null : id,
    sourceSvcAccountId: debit ? input.SvcAccountId : null, destinationSvcAccountId: debit ? null : input.SvcAccountId,
    amount: debit ? negate(amount) : amount, debit: debit ? amount : ZERO, credit: debit ? ZERO : amount, currency: input.currency,
    transactionState: 'confirmed', isPending: false, isComplete: true, isDeclined: false, txnType: 'card', typeName: debit ? 'Card payment' : 'Card reversal',
    narrative: input.narrative ?? null, narrativeSource: null, narrativeDestination: input.narrative ?? null, reference: input.reference ?? null,
    attachments: null, labels: [], details: { memos: [] }, internal: null, dtsRecorded: now, dtsValue: now, dtsBooked: now, dtsCompleted: now, accountMonth: accountMonth(input.SvcAccountId, now),
  };
  try {
    await transactions.insertOne(doc);
  } catch (error) {
    // The same message recorded already: answer with that record, and move no money twice.
    if (error instanceof MongoServerError && error.code === 11000) return (await transactions.findOne({ _id: id }))!;
    throw error;
  }
  await accountsCollection(db).updateOne({ _id: input.SvcAccountId }, { $inc: { balance: doc.amount, availableBalance: doc.amount } });
  return doc;
}

/** Opens a checking account; the account number is generated and only its last four digits are kept. */
export async function openCheckingAccount(db: Db, SvcUserId: string, currency: string) {
  if (!isCurrencyCode(currency)) throw appError(ErrorCode.VALIDATION_FAILED, 'currency must be an ISO 4217 code.', { field: 'currency' });
  const id = newId('acc_');
  const lastFour = String(randomInt(0, 10_000)).padStart(4, '0');
  await accountsCollection(db).insertOne({
    _id: id, SvcAccountId: id, SvcUserId, type: 'checking', name: 'Checking', currency, accountNumberLastFour: lastFour, balance: ZERO, availableBalance: ZERO, dtsOpened: new Date(),
  });
  return { SvcAccountId: id, accountNumber: maskLastFour(lastFour)!, routingNumber: BANK_ROUTING_NUMBER };
}
