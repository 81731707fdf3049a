import type { Db } from 'mongodb';

export type View = 'front' | 'back' | 'selfie';

/** A KYC/KYB customer of an aggregator. `_id` is `<svcAggregatorId>:<customerId>`. */
export interface CustomerDocument {
  _id: string;
  customerId: string;
  svcAggregatorId: string;
  type: 'individual' | 'business';
  reference: string | null;
  person: { firstName: string; lastName: string; dateOfBirth: string | null } | null;
  business: { legalName: string; registrationNumber: string } | null;
  businessRepresentativeId: string | null;
  applicationId: string;
  dtsCreated: Date;
}

interface LinkedView {
  view: View;
  documentId: string;
  documentType: string;
}

export interface EntityApplicationDocument {
  entityId: string;
  isCustomer: boolean;
  kind: 'person' | 'business';
  status: 'pending_step_up' | 'completed';
  outcome: string | null;
  requiredViews: View[];
  linked: LinkedView[];
}

/** A stored application; `version` makes every update conditional on what was read. */
export interface ApplicationDocument {
  _id: string;
  applicationId: string;
  svcAggregatorId: string;
  customerId: string;
  reference: string | null;
  status: 'pending_step_up' | 'completed';
  outcome: string | null;
  entityApplications: EntityApplicationDocument[];
  version: number;
  dtsCreated: Date;
  dtsUpdated: Date;
}

/** A generated document id and, once uploaded, its file in GridFS (same id). */
export interface KycDocument {
  _id: string;
  svcAggregatorId: string;
  customerId: string;
  entityId: string;
  documentType: string;
  /** `uploading` while the file is being written (a claim older than a minute may be retaken), `stored` once it is in GridFS. */
  uploaded: { contentType: string; size: number; dtsUploaded: Date; state: 'uploading' | 'stored' } | null;
  dtsCreated: Date;
}

export function kycCollections(db: Db) {
  return {
    customers: db.collection<CustomerDocument>('customers'),
    applications: db.collection<ApplicationDocument>('applications'),
    documents: db.collection<KycDocument>('kycDocuments'),
  };
}

/** The indexes of every query on these collections: an aggregator's customer's applications and documents. */
export async function createKycIndexes(db: Db): Promise<void> {
  const { applications, documents } = kycCollections(db);
  await applications.createIndex({ svcAggregatorId: 1, customerId: 1, dtsCreated: 1, _id: 1 });
  await documents.createIndex({ svcAggregatorId: 1, customerId: 1 });
}
