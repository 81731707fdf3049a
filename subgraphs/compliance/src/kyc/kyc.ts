import { GridFSBucket, MongoServerError, type Db } from 'mongodb';
import { appError, ErrorCode } from '../../../../platform/contracts/errors.js';
import type { Logger } from '../../../../platform/runtime/logger.js';
import { detectFileType, storeFile, type FileType } from '../../../../platform/mongo/files.js';
import { recordEvent } from '../../../../platform/messaging/outbox.js';
import { checkPage, readPage } from '../../../../platform/graphql/paging.js';
import { isIsoDate } from '../../../../platform/contracts/dates.js';
import { newId } from '../../../../platform/security/secrets.js';
import { checkString, ID_RULE, REFERENCE_RULE, required } from '../../../../platform/security/validate.js';
import { isOwnKey, ownValue } from '../../../../platform/contracts/own.js';
import {
  type ApplicationDocument,
  type CustomerDocument,
  type EntityApplicationDocument,
  kycCollections,
  type KycDocument,
  type View,
} from './datasource.js';

export const VIEWS: readonly View[] = ['front', 'back', 'selfie'];
/** What each document type can show: its keys are the schema's KycDocumentType. */
export const DOCUMENT_VIEWS = {
  idCard: ['front', 'back'],
  driverLicense: ['front', 'back'],
  passport: ['front', 'back'],
  selfie: ['selfie'],
  businessRegistration: ['front'],
} as const satisfies Record<string, readonly View[]>;
/** The views a person needs (front and back of an identity document, and a selfie), and a business. */
const PERSON_VIEWS: View[] = ['front', 'back', 'selfie'];
const BUSINESS_VIEWS: View[] = ['front'];
const FILE_TYPES: readonly FileType[] = ['image/jpeg', 'image/png', 'application/pdf'];
const MAX_DOCUMENT_BYTES = 5 * 1024 * 1024;

const NAME = { min: 1, max: 100, safeText: true };

function person(input: Record<string, unknown> | null | undefined, field: string) {
  const value = required(input, field);
  const dateOfBirth = checkString(value.dateOfBirth, `${field}.dateOfBirth`) ?? null;
  if (dateOfBirth && !isIsoDate(dateOfBirth))
    throw appError(ErrorCode.VALIDATION_FAILED, `${field}.dateOfBirth must be a date written YYYY-MM-DD.`, {
      field: `${field}.dateOfBirth`,
    });
  return {
    firstName: checkString(required(value.firstName, `${field}.firstName`), `${field}.firstName`, NAME)!,
    lastName: checkString(required(value.lastName, `${field}.lastName`), `${field}.lastName`, NAME)!,
    dateOfBirth,
  };
}

/** An application as the graph returns it. */
export type ApplicationView = ReturnType<typeof applicationView>;

/** The application as the aggregator spec shows it. */
export function applicationView(application: ApplicationDocument) {
  return {
    applicationId: application.applicationId,
    aggregatorId: application.svcAggregatorId,
    customerId: application.customerId,
    reference: application.reference,
    status: application.status,
    outcome: application.outcome,
    entityApplications: application.entityApplications.map((entity) => ({
      entityId: entity.entityId,
      isCustomer: entity.isCustomer,
      status: entity.status,
      outcome: entity.outcome,
      requiredViews: entity.requiredViews,
      linkedViews: entity.linked.map((link) => link.view),
    })),
    dtsCreatedAt: application.dtsCreated,
    dtsUpdatedAt: application.dtsUpdated,
  };
}

/** KYC/KYB: customers, their documents and applications, for one aggregator at a time. */
export class Kyc {
  private readonly collections: ReturnType<typeof kycCollections>;
  private readonly files: GridFSBucket;

  constructor(
    private readonly db: Db,
    private readonly logger: Logger,
  ) {
    this.collections = kycCollections(db);
    this.files = new GridFSBucket(db, { bucketName: 'kycFiles' });
  }

  /** Opens a customer and its application; a business gets a representative entity. */
  async initializeCustomer(svcAggregatorId: string, input: Record<string, unknown>) {
    const customerId = checkString(required(input.customerId, 'customerId'), 'customerId', ID_RULE)!;
    const type = checkString(required(input.type, 'type'), 'type')!;
    if (type !== 'individual' && type !== 'business')
      throw appError(ErrorCode.VALIDATION_FAILED, 'type must be individual or business.', { field: 'type' });
    const reference = checkString(input.reference, 'reference', REFERENCE_RULE) ?? null;
    const now = new Date();
    const applicationId = newId('app_');
    let entities: EntityApplicationDocument[];
    let customer: CustomerDocument;
    const entity = (entityId: string, isCustomer: boolean, kind: 'person' | 'business'): EntityApplicationDocument => ({
      entityId,
      isCustomer,
      kind,
      status: 'pending_step_up',
      outcome: null,
      requiredViews: kind === 'person' ? PERSON_VIEWS : BUSINESS_VIEWS,
      linked: [],
    });
    if (type === 'individual') {
      customer = {
        _id: `${svcAggregatorId}:${customerId}`,
        customerId,
        svcAggregatorId,
        type,
        reference,
        person: person(input.individual as Record<string, unknown>, 'individual'),
        business: null,
        businessRepresentativeId: null,
        applicationId,
        dtsCreated: now,
      };
      entities = [entity(customerId, true, 'person')];
    } else {
      const business = required(input.business as Record<string, unknown> | null | undefined, 'business');
      const representativeId = newId('rep_');
      customer = {
        _id: `${svcAggregatorId}:${customerId}`,
        customerId,
        svcAggregatorId,
        type,
        reference,
        person: person(business.representative as Record<string, unknown>, 'business.representative'),
        business: {
          legalName: checkString(required(business.legalName, 'business.legalName'), 'business.legalName', {
            min: 1,
            max: 200,
            safeText: true,
          })!,
          registrationNumber: checkString(
            required(business.registrationNumber, 'business.registrationNumber'),
            'business.registrationNumber',
            { min: 1, max: 50, pattern: /^[A-Za-z0-9-]+$/, patternText: 'letters, digits or dashes' },
          )!,
        },
        businessRepresentativeId: representativeId,
        applicationId,
        dtsCreated: now,
      };
      entities = [entity(customerId, true, 'business'), entity(representativeId, false, 'person')];
    }
    const application: ApplicationDocument = {
      _id: applicationId,
      applicationId,
      svcAggregatorId,
      customerId,
      reference,
      status: 'pending_step_up',
      outcome: null,
      entityApplications: entities,
      version: 0,
      dtsCreated: now,
      dtsUpdated: now,
    };
    // The application first: if the customer then fails, an unreferenced application is harmless,
    // whereas a customer pointing at no application could never be completed.
    await this.collections.applications.insertOne(application);
    try {
      await this.collections.customers.insertOne(customer);
    } catch (error) {
      await this.collections.applications.deleteOne({ _id: applicationId });
      if (error instanceof MongoServerError && error.code === 11000)
        throw appError(ErrorCode.CONFLICT, `Customer ${customerId} already exists.`, { field: 'customerId' });
      throw error;
    }
    this.logger.info('customer initialised', { svcAggregatorId, customerId, type, applicationId });
    return {
      customerId,
      type: customer.type,
      applicationId,
      businessRepresentativeId: customer.businessRepresentativeId,
      application: applicationView(application),
    };
  }

  /** Issues a document id for one file of an entity of the customer's open application. */
  async generateDocument(svcAggregatorId: string, input: Record<string, unknown>) {
    const customerId = checkString(required(input.customerId, 'customerId'), 'customerId', ID_RULE)!;
    const entityId = checkString(required(input.entityId, 'entityId'), 'entityId', ID_RULE)!;
    const documentType = checkString(required(input.documentType, 'documentType'), 'documentType')!;
    if (!isOwnKey(DOCUMENT_VIEWS, documentType))
      throw appError(ErrorCode.VALIDATION_FAILED, `documentType must be one of ${Object.keys(DOCUMENT_VIEWS).join(', ')}.`, {
        field: 'documentType',
      });
    const customer = await this.collections.customers.findOne({ _id: `${svcAggregatorId}:${customerId}` });
    if (!customer) throw appError(ErrorCode.NOT_FOUND, `No customer ${customerId}.`, { field: 'customerId' });
    const application = await this.collections.applications.findOne({ _id: customer.applicationId });
    if (!application?.entityApplications.some((e) => e.entityId === entityId))
      throw appError(ErrorCode.VALIDATION_FAILED, `entityId ${entityId} is not an entity of the customer's application.`, {
        field: 'entityId',
      });
    if (application.status === 'completed')
      throw appError(ErrorCode.CONFLICT, 'The application is completed: it takes no more documents.', { field: 'customerId' });
    if ((await this.collections.documents.countDocuments({ svcAggregatorId, customerId, entityId })) >= 20) {
      throw appError(ErrorCode.CONFLICT, 'An entity may have at most 20 documents.', { field: 'entityId' });
    }
    const documentId = newId('doc_');
    await this.collections.documents.insertOne({
      _id: documentId,
      svcAggregatorId,
      customerId,
      entityId,
      documentType,
      uploaded: null,
      dtsCreated: new Date(),
    });
    return { documentId, customerId, entityId, documentType, uploadPath: `/akepa/document/upload/${documentId}` };
  }

  /** Stores a generated document's file in GridFS after checking its type by content and its size. */
  async uploadDocument(svcAggregatorId: string, input: Record<string, unknown>) {
    const documentId = checkString(required(input.documentId, 'documentId'), 'documentId', ID_RULE)!;
    const base64 = checkString(required(input.contentBase64, 'file'), 'file')!;
    const bytes = Buffer.from(base64, 'base64');
    if (bytes.length === 0 || bytes.length > MAX_DOCUMENT_BYTES)
      throw appError(ErrorCode.PAYLOAD_TOO_LARGE, `The file must be 1 to ${MAX_DOCUMENT_BYTES} bytes.`, { field: 'file' });
    // The type is what the content is, whatever the upload declared.
    const contentType = detectFileType(bytes, FILE_TYPES);
    if (!contentType)
      throw appError(ErrorCode.UNSUPPORTED_MEDIA_TYPE, `The file must be one of ${FILE_TYPES.join(', ')}.`, { field: 'file' });
    const document = await this.collections.documents.findOne({ _id: documentId, svcAggregatorId });
    if (!document) throw appError(ErrorCode.NOT_FOUND, `No document ${documentId}; generate it first.`, { field: 'documentId' });
    // Claim the upload: a document holds one file, and two racing uploads cannot both store one.
    // The claim says `uploading`; only a stored file makes the document linkable.
    const claimed = await this.collections.documents.findOneAndUpdate(
      {
        _id: documentId,
        $or: [{ uploaded: null }, { 'uploaded.state': 'uploading', 'uploaded.dtsUploaded': { $lt: new Date(Date.now() - 60_000) } }],
      },
      { $set: { uploaded: { contentType, size: bytes.length, dtsUploaded: new Date(), state: 'uploading' } } },
    );
    if (!claimed) throw appError(ErrorCode.CONFLICT, `Document ${documentId} already has its file.`, { field: 'documentId' });
    try {
      // A stale claim may have left chunks behind.
      await this.files.delete(documentId as never).catch(() => undefined);
      await storeFile(this.files, documentId, checkString(input.fileName, 'fileName') ?? documentId, bytes, {
        svcAggregatorId,
        customerId: document.customerId,
        entityId: document.entityId,
        documentType: document.documentType,
        contentType,
      });
    } catch (error) {
      await this.collections.documents.updateOne({ _id: documentId }, { $set: { uploaded: null } });
      throw error;
    }
    await this.collections.documents.updateOne({ _id: documentId }, { $set: { 'uploaded.state': 'stored' } });
    return { documentId, contentType, size: bytes.length };
  }

  /** Applications of one customer, oldest first, with the list total of the aggregator spec. */
  async list(
    svcAggregatorId: string,
    input: {
      customerId?: string | null;
      dateCreateFrom?: string | null;
      dateCreateTo?: string | null;
      numberOfRecords?: number | null;
      skipRecords?: number | null;
    },
  ) {
    const customerId = checkString(required(input.customerId, 'customerId'), 'customerId', ID_RULE)!;
    const page = checkPage(input);
    const created: Record<string, Date> = {};
    if (input.dateCreateFrom) created.$gte = new Date(`${input.dateCreateFrom}T00:00:00.000Z`);
    if (input.dateCreateTo) created.$lt = new Date(new Date(`${input.dateCreateTo}T00:00:00.000Z`).getTime() + 24 * 3600_000);
    const filter = { svcAggregatorId, customerId, ...(Object.keys(created).length ? { dtsCreated: created } : {}) };
    const { items, total } = await readPage(this.collections.applications.find(filter).sort({ dtsCreated: 1, _id: 1 }), page);
    return { items: items.map(applicationView), total };
  }

  /** Links uploaded documents to the application's entities: the spec's state machine. */
  async update(svcAggregatorId: string, input: Record<string, unknown>) {
    const customerId = checkString(required(input.customerId, 'customerId'), 'customerId', ID_RULE)!;
    const applicationId = checkString(required(input.applicationId, 'applicationId'), 'applicationId', ID_RULE)!;
    const attachments = ((input.documents as Array<Record<string, unknown>> | null | undefined) ?? []).map((doc, i) => ({
      entityId: checkString(required(doc.entityId, `documents[${i}].entityId`), `documents[${i}].entityId`, ID_RULE)!,
      documentId: checkString(required(doc.documentId, `documents[${i}].documentId`), `documents[${i}].documentId`, ID_RULE)!,
      view: checkString(required(doc.view, `documents[${i}].view`), `documents[${i}].view`)! as View,
      field: `documents[${i}]`,
    }));
    for (const a of attachments) {
      if (!VIEWS.includes(a.view))
        throw appError(ErrorCode.VALIDATION_FAILED, `${a.field}.view must be front, back or selfie.`, { field: `${a.field}.view` });
    }
    for (let attempt = 0; attempt < 5; attempt += 1) {
      const application = await this.collections.applications.findOne({ _id: applicationId, svcAggregatorId, customerId });
      if (!application)
        throw appError(ErrorCode.NOT_FOUND, `No application ${applicationId} of customer ${customerId}.`, { field: 'applicationId' });
      if (application.status === 'completed') {
        // Its event exists even if a failure came between the completing write and the event.
        await this.completedEvent(application);
        if (attachments.length === 0) return applicationView(application);
        throw appError(ErrorCode.CONFLICT, 'The application is completed: it accepts no more documents.', { field: 'documents' });
      }
      const documents = new Map(
        (await this.collections.documents.find({ _id: { $in: attachments.map((a) => a.documentId) }, svcAggregatorId }).toArray()).map(
          (d) => [d._id, d],
        ),
      );
      const next = this.link(application, attachments, documents);
      const now = new Date();
      const updated = await this.collections.applications.findOneAndUpdate(
        { _id: applicationId, version: application.version, status: 'pending_step_up' },
        { $set: { ...next, version: application.version + 1, dtsUpdated: now } },
        { returnDocument: 'after' },
      );
      if (!updated) continue;
      if (updated.status === 'completed') {
        await this.completedEvent(updated);
        this.logger.info('application completed', { applicationId, outcome: updated.outcome });
      }
      return applicationView(updated);
    }
    throw appError(ErrorCode.CONFLICT, 'The application is being changed by another request; try again.');
  }

  private completedEvent(application: ApplicationDocument): Promise<void> {
    return recordEvent(
      this.db,
      'application.completed',
      { svcAggregatorId: application.svcAggregatorId },
      { applicationId: application.applicationId, customerId: application.customerId, outcome: application.outcome },
      `application.completed:${application.applicationId}`,
    );
  }

  /** Checks every attachment against the application and computes the new entity states; throws on the first problem. */
  private link(
    application: ApplicationDocument,
    attachments: Array<{ entityId: string; documentId: string; view: View; field: string }>,
    documents: Map<string, KycDocument>,
  ) {
    const entities = application.entityApplications.map((e) => ({ ...e, linked: [...e.linked] }));
    const usedDocuments = new Set(entities.flatMap((e) => e.linked.map((l) => l.documentId)));
    for (const a of attachments) {
      const entity = entities.find((e) => e.entityId === a.entityId);
      if (!entity)
        throw appError(ErrorCode.VALIDATION_FAILED, `${a.field}.entityId is not an entity of this application.`, {
          field: `${a.field}.entityId`,
        });
      const document = documents.get(a.documentId);
      if (!document || document.customerId !== application.customerId || document.entityId !== a.entityId) {
        throw appError(ErrorCode.VALIDATION_FAILED, `${a.field}.documentId was not generated for this entity.`, {
          field: `${a.field}.documentId`,
        });
      }
      if (document.uploaded?.state !== 'stored')
        throw appError(ErrorCode.VALIDATION_FAILED, `${a.field}.documentId has no uploaded file yet.`, { field: `${a.field}.documentId` });
      if (!entity.requiredViews.includes(a.view))
        throw appError(ErrorCode.VALIDATION_FAILED, `${a.field}.view ${a.view} is not needed for this entity.`, {
          field: `${a.field}.view`,
        });
      if (!ownValue<readonly View[]>(DOCUMENT_VIEWS, document.documentType)?.includes(a.view))
        throw appError(ErrorCode.VALIDATION_FAILED, `A ${document.documentType} cannot be the ${a.view} view.`, {
          field: `${a.field}.view`,
        });
      if (entity.linked.some((l) => l.view === a.view))
        throw appError(ErrorCode.VALIDATION_FAILED, `The ${a.view} of entity ${a.entityId} is already linked.`, {
          field: `${a.field}.view`,
        });
      if (usedDocuments.has(a.documentId))
        throw appError(ErrorCode.VALIDATION_FAILED, `${a.field}.documentId is already linked.`, { field: `${a.field}.documentId` });
      usedDocuments.add(a.documentId);
      entity.linked.push({ view: a.view, documentId: a.documentId, documentType: document.documentType });
    }
    for (const entity of entities) {
      const views = new Set(entity.linked.map((l) => l.view));
      // Front and back of an entity's document travel together.
      if (entity.requiredViews.includes('back') && views.has('front') !== views.has('back')) {
        throw appError(
          ErrorCode.VALIDATION_FAILED,
          `Front and back of entity ${entity.entityId}'s document must be linked in the same request.`,
          { field: 'documents' },
        );
      }
      if (entity.requiredViews.every((view) => views.has(view))) {
        const front = entity.linked.find((l) => l.view === 'front');
        const back = entity.linked.find((l) => l.view === 'back');
        entity.status = 'completed';
        entity.outcome = !back || front?.documentType === back.documentType ? 'Approved' : 'Declined';
      }
    }
    const completed = entities.every((e) => e.status === 'completed');
    return {
      entityApplications: entities,
      status: completed ? ('completed' as const) : ('pending_step_up' as const),
      outcome: completed ? (entities.every((e) => e.outcome === 'Approved') ? 'Approved' : 'Declined') : null,
    };
  }
}

/** A document as `generateDocument` answers it. */
export type GeneratedDocumentView = Awaited<ReturnType<Kyc['generateDocument']>>;
/** A document as `uploadDocument` answers it. */
export type UploadedDocumentView = Awaited<ReturnType<Kyc['uploadDocument']>>;
