import type { Collection, Db } from 'mongodb';
import type { MinorUnits } from '../../../../platform/money/money.js';

/** A stored beneficiary. Account numbers and PANs are stored masked: last four only. */
export interface BeneficiaryDocument {
  _id: string;
  SvcBeneficiaryId: string;
  SvcUserId: string;
  name: string | null;
  /** In the minor units of `defaultCurrency`, or of USD while that is null. */
  defaultAmount: MinorUnits | null;
  defaultCurrency: string | null;
  status: string | null;
  isActive: boolean;
  isHidden: boolean | null;
  isFavourite: boolean;
  isDeleted: boolean;
  paypalId: string | null;
  bankName: string | null;
  accountNumberLastFour: string | null;
  routingNumber: string | null;
  bic: string | null;
  iban: string | null;
  destinationName: string | null;
  destinationFirstName: string | null;
  destinationLastName: string | null;
  destinationPANLastFour: string | null;
  expiryMM: string | null;
  expiryYY: string | null;
  type: string | null;
  typeName: string | null;
  txnType: string | null;
  narrativeCredit: string | null;
  narrativeDebit: string | null;
  defaultSourceAccountId: string | null;
  SvcPayeeId: string | null;
  dtsCreated: Date;
  dtsModified: Date;
}

export function beneficiariesCollection(db: Db): Collection<BeneficiaryDocument> {
  return db.collection<BeneficiaryDocument>('beneficiaries');
}

/** The stored, masked beneficiary properties a modification may change. */
export type BeneficiaryState = Omit<BeneficiaryDocument, '_id' | 'SvcBeneficiaryId' | 'SvcUserId' | 'dtsCreated' | 'dtsModified'>;

/** What undoes one beneficiary modification or deletion: the values it replaced. */
export interface UndoDocument {
  _id: string;
  SvcBeneficiaryId: string;
  SvcUserId: string;
  /** The replaced values of the properties the modification changed. */
  previous: Partial<BeneficiaryState>;
  /** The beneficiary's dtsModified before and after the modification. */
  dtsModifiedBefore: Date;
  dtsModifiedAfter: Date;
  dtsQueued: Date;
  dtsExpiry: Date;
  dtsUsed: Date | null;
}

export function beneficiaryUndosCollection(db: Db): Collection<UndoDocument> {
  return db.collection<UndoDocument>('beneficiaryUndos');
}

/** The indexes of every query on these collections. */
export async function createBeneficiaryIndexes(db: Db): Promise<void> {
  await beneficiariesCollection(db).createIndex({ SvcUserId: 1 });
  await beneficiaryUndosCollection(db).createIndex({ SvcBeneficiaryId: 1 });
}
