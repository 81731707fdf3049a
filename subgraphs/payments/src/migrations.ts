import type { Db } from 'mongodb';
import { convertOnce, type Migration, type StoredDocument } from '../../../platform/mongo/migrations.js';
import { minorFromLegacy } from '../../../platform/money/money.js';
import { accountsCollection } from './accounts/datasource.js';
import { transactionsCollection } from './accounts/transactions-datasource.js';
import { achPaymentsCollection } from './ach/datasource.js';
import { beneficiariesCollection, beneficiaryUndosCollection } from './beneficiaries/datasource.js';
import { fundsTransactionsCollection } from './funds/datasource.js';
import { iouTransactionsCollection } from './ious/datasource.js';
import { paymentLinksCollection, refundsCollection } from './payment-links/datasource.js';

/** The members of a legacy document that held amounts as floats, in minor units of `currency`. */
function amounts(doc: StoredDocument, names: readonly string[], currency: unknown): Record<string, unknown> | null {
  if (typeof currency !== 'string') return null;
  const changes = Object.fromEntries(names.filter((name) => typeof doc[name] === 'number').map((name) => [name, minorFromLegacy(doc[name] as number, currency)]));
  return Object.keys(changes).length > 0 ? changes : null;
}

const MONEY_ID = 'payments-money-in-minor-units';

/** Amounts were stored as floats in the currency's units; they are integers of its minor units now. */
export const MONEY_IN_MINOR_UNITS: Migration = {
  id: MONEY_ID,
  async run(db: Db) {
    const id = MONEY_ID;
    await convertOnce(db, accountsCollection(db).collectionName, id, (doc) => amounts(doc, ['balance', 'availableBalance'], doc.currency));
    await convertOnce(db, transactionsCollection(db).collectionName, id, (doc) => amounts(doc, ['amount', 'debit', 'credit'], doc.currency));
    await convertOnce(db, beneficiariesCollection(db).collectionName, id, (doc) => amounts(doc, ['defaultAmount'], doc.defaultCurrency ?? 'USD'));
    // An undo within its five minutes restores the amount it kept.
    await convertOnce(db, beneficiaryUndosCollection(db).collectionName, id, (doc) => {
      const previous = doc.previous as StoredDocument | undefined;
      const amount = previous && amounts(previous, ['defaultAmount'], previous.defaultCurrency ?? 'USD');
      return amount ? { 'previous.defaultAmount': amount.defaultAmount } : null;
    });
    await convertOnce(db, iouTransactionsCollection(db).collectionName, id, (doc) => amounts(doc, ['lent'], doc.currency));
    await convertOnce(db, fundsTransactionsCollection(db).collectionName, id, (doc) => amounts(doc, ['fee', 'balance', 'lastDepositAmount', 'ledgerBalance'], 'USD'));
    await convertOnce(db, achPaymentsCollection(db).collectionName, id, (doc) => amounts(doc, ['amount'], doc.currency));
    // The refunded total was already kept in cents, under another name.
    await convertOnce(db, paymentLinksCollection(db).collectionName, id, (doc) => ({ ...amounts(doc, ['amount'], doc.currency), refunded: doc.refundedCents ?? 0, refundedCents: undefined }));
    await convertOnce(db, refundsCollection(db).collectionName, id, (doc) => {
      const ach = doc.ach as { payment: StoredDocument } | null;
      const payment = ach && amounts(ach.payment, ['amount'], ach.payment.currency);
      return { ...amounts(doc, ['amount'], doc.currency), ...(payment ? { 'ach.payment.amount': payment.amount } : {}) };
    });
  },
};

/** The payments database's migrations, oldest first. */
export const PAYMENTS_MIGRATIONS: readonly Migration[] = [MONEY_IN_MINOR_UNITS];
