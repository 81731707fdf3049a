import { createClient } from 'graphql-ws';
import { GridFSBucket } from 'mongodb';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO } from '../../platform/domain/demo.js';
import { startTestStack, until, type TestStack } from '../support/harness.js';

interface Envelope<T> {
  code: string;
  data: T;
  requestId: string;
  message?: string;
  field?: string;
}
interface ApplicationBody {
  applicationId: string;
  aggregatorId: string;
  customerId: string;
  reference: string | null;
  status: string;
  outcome: string | null;
  entityApplications: Array<{ entityId: string; isCustomer: boolean; status: string; outcome: string | null }>;
}
interface InitBody {
  customerId: string;
  applicationId: string;
  businessRepresentativeId: string | null;
  application: ApplicationBody;
}
interface ListBody {
  items: ApplicationBody[];
  total: { skipRecords: number; numberOfRecords: number; more: boolean };
}

const SERVICE_KEY = 'payments-service-key-0123456789abcdef';
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(200, 7)]);
const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(200, 9)]);

describe('restrictions over REST and GraphQL', () => {
  let stack: TestStack;
  let token: string;
  beforeAll(async () => {
    stack = await startTestStack({ SERVICE_KEYS: `payments=${SERVICE_KEY}` });
    token = await stack.loginDemo();
  });
  afterAll(async () => {
    await stack.stop();
  });

  it('lists restrictions, procedural restriction names and the allowed transaction types exactly as documented', async () => {
    const response = await stack.rest<{
      success: boolean;
      restrictions: Array<Record<string, unknown>>;
      proceduralRestrictionNames: string[];
      allowedTransactionTypeNames: Record<string, Record<string, unknown>>;
    }>('GET', '/restrictions', { headers: { token } });
    expect(response.status).toBe(200);
    expect(response.body.restrictions.map((r) => r.restrictionName)).toEqual([
      'cardTopUpUpTo20000',
      'noInternational',
      'domesticUpTo5000',
      'noPaypalOver500',
    ]);
    expect(response.body.restrictions[1]).toEqual({
      restrictionName: 'noInternational',
      description: 'International transfers are not allowed.',
      txnTypes: ['international'],
      transactionCurrencies: ['*'],
      fromAmount: null,
      toAmount: null,
      fromAmountCurrency: null,
      toAmountCurrency: null,
      isAllowed: false,
      isIgnoreRest: true,
      priority: 0,
    });
    expect(response.body.proceduralRestrictionNames).toEqual([]);
    expect(Object.keys(response.body.allowedTransactionTypeNames).sort()).toEqual([
      '1',
      'USA',
      'USA_wire',
      'cheque',
      'international',
      'paypal',
      'tocard',
    ]);
    expect(response.body.allowedTransactionTypeNames.tocard).toEqual({
      isAllowed: true,
      sourceAccountTypes: ['checking', 'savings', 'card'],
      destinationAccountTypes: ['card'],
      allowedTransactionCurrencies: ['USD', 'EUR', 'GBP'],
    });
    expect(response.body.allowedTransactionTypeNames.USA).not.toHaveProperty('destinationAccountTypes');
  });

  const EVALUATE =
    'query ($input: TransactionProposalInput!) { evaluateTransaction(input: $input) { allowed decidedBy rule reason restriction { restrictionName } } }';
  type Decision = { evaluateTransaction: { allowed: boolean; decidedBy: string; rule: string | null } };

  it.each([
    [{ txnType: 'paypal', amount: 400, currency: 'USD', sourceAccountType: 'checking' }, true, 'domesticUpTo5000'],
    [{ txnType: 'paypal', amount: 600, currency: 'USD', sourceAccountType: 'checking' }, false, 'noPaypalOver500'],
    [
      { txnType: 'tocard', amount: 15000, currency: 'USD', sourceAccountType: 'checking', destinationAccountType: 'card' },
      true,
      'cardTopUpUpTo20000',
    ],
    [{ txnType: 'international', amount: 10, currency: 'EUR', sourceAccountType: 'checking' }, false, 'noInternational'],
    [{ txnType: 'USA', amount: 7000, currency: 'USD', sourceAccountType: 'checking' }, false, null],
  ])("evaluates the demo user's transaction %# over GraphQL", async (input, allowed, rule) => {
    const response = await stack.graphql<Decision>(EVALUATE, { input }, { token });
    expect(response.body.errors).toBeUndefined();
    expect(response.body.data?.evaluateTransaction).toMatchObject({ allowed, rule });
  });

  it('lets an internal service evaluate for any user, and applies platform defaults to a user without restrictions', async () => {
    const demo = await stack.graphql<Decision>(
      EVALUATE,
      { input: { SvcUserId: DEMO.userId, txnType: 'USA', amount: 4000, currency: 'USD', sourceAccountType: 'checking' } },
      { 'x-service-key': SERVICE_KEY },
    );
    expect(demo.body.data?.evaluateTransaction).toMatchObject({ allowed: true, rule: 'domesticUpTo5000' });
    const fresh = await stack.graphql<Decision>(
      EVALUATE,
      { input: { SvcUserId: 'someone_new', txnType: 'USA', amount: 4000, currency: 'USD', sourceAccountType: 'checking' } },
      { 'x-service-key': SERVICE_KEY },
    );
    expect(fresh.body.data?.evaluateTransaction).toMatchObject({ allowed: false, decidedBy: 'default' });
    const small = await stack.graphql<Decision>(
      EVALUATE,
      { input: { SvcUserId: 'someone_new', txnType: 'USA', amount: 2000, currency: 'USD', sourceAccountType: 'checking' } },
      { 'x-service-key': SERVICE_KEY },
    );
    expect(small.body.data?.evaluateTransaction).toMatchObject({ allowed: true, rule: 'defaultUpTo2500' });
  });

  it("refuses an end user's evaluation for another user, and a non-positive amount", async () => {
    const other = await stack.graphql(
      EVALUATE,
      { input: { SvcUserId: 'someone_else', txnType: 'USA', amount: 1, currency: 'USD', sourceAccountType: 'checking' } },
      { token },
    );
    expect(other.body.errors?.[0]?.extensions).toMatchObject({ code: 'FORBIDDEN', field: 'SvcUserId' });
    const negative = await stack.graphql(
      EVALUATE,
      { input: { txnType: 'USA', amount: -5, currency: 'USD', sourceAccountType: 'checking' } },
      { token },
    );
    expect(negative.body.errors?.[0]?.extensions).toMatchObject({ code: 'VALIDATION_FAILED', field: 'amount' });
  });

  it('refuses every transaction while a procedural restriction stands, and names it', async () => {
    await stack.mongo
      .db('compliance')
      .collection<{ _id: string; SvcUserId: string; name: string; reason: string; dtsCreated: Date }>('proceduralRestrictions')
      .insertOne({ _id: 'proc_1', SvcUserId: DEMO.userId, name: 'amlReview', reason: 'Account under AML review.', dtsCreated: new Date() });
    try {
      const decision = await stack.graphql<Decision>(
        EVALUATE,
        { input: { txnType: 'USA', amount: 1, currency: 'USD', sourceAccountType: 'checking' } },
        { token },
      );
      expect(decision.body.data?.evaluateTransaction).toMatchObject({ allowed: false, decidedBy: 'procedural', rule: 'amlReview' });
      const listed = await stack.rest<{ proceduralRestrictionNames: string[] }>('GET', '/restrictions', { headers: { token } });
      expect(listed.body.proceduralRestrictionNames).toEqual(['amlReview']);
    } finally {
      await stack.mongo.db('compliance').collection('proceduralRestrictions').deleteMany({});
    }
  });
});

describe('KYC/KYB applications', () => {
  let stack: TestStack;
  let svcToken: string;
  let confined: string;
  const call = <T>(path: string, body: unknown, token = svcToken) =>
    stack.rest<Envelope<T>>('POST', path, { headers: { 'x-svc-token': token }, body });

  async function upload(documentId: string, file: Buffer, contentType: string, token = svcToken) {
    const form = new FormData();
    form.append('file', new Blob([file], { type: contentType }), 'scan');
    const response = await stack.restFetch(`/akepa/document/upload/${documentId}`, {
      method: 'POST',
      headers: { 'x-svc-token': token },
      body: form,
    });
    return { status: response.status, body: (await response.json()) as Envelope<{ documentId: string; size: number }> };
  }

  /** Generates and uploads one document; returns its id. */
  async function document(customerId: string, entityId: string, documentType: string, file = PNG) {
    const generated = await call<{ documentId: string; uploadPath: string }>('/akepa/document/generate', {
      customerId,
      entityId,
      documentType,
    });
    expect(generated.status).toBe(200);
    expect(generated.body.data.uploadPath).toBe(`/akepa/document/upload/${generated.body.data.documentId}`);
    expect((await upload(generated.body.data.documentId, file, file === PNG ? 'image/png' : 'image/jpeg')).status).toBe(200);
    return generated.body.data.documentId;
  }

  beforeAll(async () => {
    stack = await startTestStack();
    const tokens = await stack.rest<Envelope<{ token: string; tokens: Array<{ token: string; type: string }> }>>(
      'POST',
      '/auth/get-token',
      { body: { user: { login: DEMO.aggregatorLogin, password: DEMO.aggregatorPassword } } },
    );
    svcToken = tokens.body.data.token;
    confined = tokens.body.data.tokens.find((t) => t.type === 'confined')!.token;
  });
  afterAll(async () => {
    await stack.stop();
  });

  it('initialises an individual customer whose entity is the customer itself', async () => {
    const response = await call<InitBody>('/akepa/customer/init', {
      customerId: 'ind_1',
      type: 'individual',
      reference: 'REF1',
      individual: { firstName: 'Ida', lastName: 'Individual', dateOfBirth: '1990-01-02' },
    });
    expect(response.status).toBe(200);
    expect(response.body.code).toBe('0');
    expect(response.body.data.businessRepresentativeId).toBeNull();
    expect(response.body.data.application).toMatchObject({
      customerId: 'ind_1',
      aggregatorId: DEMO.aggregatorId,
      status: 'pending_step_up',
      outcome: null,
      entityApplications: [{ entityId: 'ind_1', isCustomer: true, status: 'pending_step_up', outcome: null }],
    });
    const again = await call('/akepa/customer/init', {
      customerId: 'ind_1',
      type: 'individual',
      individual: { firstName: 'I', lastName: 'I' },
    });
    expect(again.status).toBe(409);
  });

  it('takes front and back together, stays pending_step_up while the selfie is missing, then completes Approved and accepts no more', async () => {
    const init = (
      await call<InitBody>('/akepa/customer/init', {
        customerId: 'ind_2',
        type: 'individual',
        individual: { firstName: 'Ivo', lastName: 'Ind' },
      })
    ).body.data;
    const front = await document('ind_2', 'ind_2', 'idCard');
    const back = await document('ind_2', 'ind_2', 'idCard');
    const selfie = await document('ind_2', 'ind_2', 'selfie', JPEG);
    const update = (documents: unknown[]) =>
      call<ApplicationBody>('/akepa/update', { customerId: 'ind_2', applicationId: init.applicationId, documents });

    const frontOnly = await update([{ entityId: 'ind_2', documentId: front, view: 'front' }]);
    expect(frontOnly.status).toBe(400);
    expect(frontOnly.body.field).toBe('documents');

    const sides = await update([
      { entityId: 'ind_2', documentId: front, view: 'front' },
      { entityId: 'ind_2', documentId: back, view: 'back' },
    ]);
    expect(sides.status).toBe(200);
    expect(sides.body.data).toMatchObject({ status: 'pending_step_up', outcome: null });

    // The aggregator's dashboard hears of the completion over graphql-ws.
    const completed: Array<{ applicationId: string; outcome: string | null }> = [];
    const client = createClient({
      url: `${stack.gateway.url.replace('http', 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { 'x-svc-token': svcToken },
      retryAttempts: 0,
    });
    let connected!: () => void;
    const ready = new Promise<void>((resolve) => (connected = resolve));
    client.on('connected', () => connected());
    const before = stack.gateway.subscribers();
    client.subscribe<{ kycApplicationCompleted: { applicationId: string; outcome: string | null } }>(
      { query: 'subscription { kycApplicationCompleted { applicationId outcome } }' },
      {
        next: ({ data }) => {
          if (data) completed.push(data.kycApplicationCompleted);
        },
        error: () => {},
        complete: () => {},
      },
    );
    await ready;
    // Registered at the gateway, so the completion's event reaches it.
    await until(
      async () => stack.gateway.subscribers(),
      (n) => n > before,
    );

    const done = await update([{ entityId: 'ind_2', documentId: selfie, view: 'selfie' }]);
    expect(done.body.data).toMatchObject({
      status: 'completed',
      outcome: 'Approved',
      entityApplications: [{ status: 'completed', outcome: 'Approved' }],
    });
    for (let i = 0; i < 100 && completed.length === 0; i += 1) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(completed).toEqual([{ applicationId: init.applicationId, outcome: 'Approved' }]);
    await client.dispose();
    const events = await stack.mongo.db('compliance').collection('outbox').find({ type: 'application.completed' }).toArray();
    expect(events.map((e) => (e.payload as { applicationId: string }).applicationId)).toContain(init.applicationId);

    const late = await update([{ entityId: 'ind_2', documentId: front, view: 'front' }]);
    expect(late.status).toBe(409);
    const generate = await call('/akepa/document/generate', { customerId: 'ind_2', entityId: 'ind_2', documentType: 'passport' });
    expect(generate.status).toBe(409);
  });

  it('completes a business application, with its representative, Declined when front and back come from different documents', async () => {
    const init = (
      await call<InitBody>('/akepa/customer/init', {
        customerId: 'biz_1',
        type: 'business',
        reference: 'BIZ1',
        business: { legalName: 'Acme Widgets LLC', registrationNumber: 'DE-123', representative: { firstName: 'Rita', lastName: 'Rep' } },
      })
    ).body.data;
    const rep = init.businessRepresentativeId!;
    expect(rep).toMatch(/^rep_/);
    expect(init.application.entityApplications.map((e) => [e.entityId, e.isCustomer])).toEqual([
      ['biz_1', true],
      [rep, false],
    ]);
    const registration = await document('biz_1', 'biz_1', 'businessRegistration');
    const front = await document('biz_1', rep, 'idCard');
    const back = await document('biz_1', rep, 'driverLicense');
    const selfie = await document('biz_1', rep, 'selfie');
    const wrongEntity = await call<ApplicationBody>('/akepa/update', {
      customerId: 'biz_1',
      applicationId: init.applicationId,
      documents: [{ entityId: 'biz_1', documentId: front, view: 'front' }],
    });
    expect(wrongEntity.status).toBe(400);
    const done = await call<ApplicationBody>('/akepa/update', {
      customerId: 'biz_1',
      applicationId: init.applicationId,
      documents: [
        { entityId: 'biz_1', documentId: registration, view: 'front' },
        { entityId: rep, documentId: front, view: 'front' },
        { entityId: rep, documentId: back, view: 'back' },
        { entityId: rep, documentId: selfie, view: 'selfie' },
      ],
    });
    expect(done.status).toBe(200);
    expect(done.body.data).toMatchObject({ status: 'completed', outcome: 'Declined' });
    expect(done.body.data.entityApplications.map((e) => e.outcome)).toEqual(['Approved', 'Declined']);
  });

  it.each([
    ['a customerId with a dash', { customerId: 'a-b', applicationId: 'x' }, 'customerId'],
    ['an applicationId of 37 characters', { customerId: 'ind_1', applicationId: 'a'.repeat(37) }, 'applicationId'],
    [
      'a view that is not one',
      { customerId: 'ind_1', applicationId: 'x', documents: [{ entityId: 'ind_1', documentId: 'd', view: 'side' }] },
      'documents[0].view',
    ],
    [
      'a document without entityId',
      { customerId: 'ind_1', applicationId: 'x', documents: [{ documentId: 'd', view: 'front' }] },
      'documents[0].entityId',
    ],
  ])('refuses an update with %s, naming the field', async (_name, body, field) => {
    const response = await call('/akepa/update', body);
    expect(response.status).toBe(400);
    expect(response.body.field).toBe(field);
  });

  it('checks the upload: type by content, size, a generated id, one file per document', async () => {
    await call('/akepa/customer/init', { customerId: 'ind_3', type: 'individual', individual: { firstName: 'U', lastName: 'Pload' } });
    const { documentId } = (
      await call<{ documentId: string }>('/akepa/document/generate', { customerId: 'ind_3', entityId: 'ind_3', documentType: 'idCard' })
    ).body.data;
    expect((await upload(documentId, Buffer.from('GIF89a....'), 'image/gif')).status).toBe(415);
    expect((await upload(documentId, Buffer.from('plain text, not an image'), 'image/png')).status).toBe(415);
    expect((await upload(documentId, Buffer.concat([PNG, Buffer.alloc(5 * 1024 * 1024)]), 'image/png')).status).toBe(413);
    expect((await upload('doc_unknown', PNG, 'image/png')).status).toBe(404);
    const ok = await upload(documentId, PNG, 'application/octet-stream');
    expect(ok.status).toBe(200);
    expect(ok.body.data.size).toBe(PNG.length);
    const large = (
      await call<{ documentId: string }>('/akepa/document/generate', { customerId: 'ind_3', entityId: 'ind_3', documentType: 'idCard' })
    ).body.data.documentId;
    const almostFiveMiB = Buffer.concat([JPEG, Buffer.alloc(4.9 * 1024 * 1024)]);
    const big = await upload(large, almostFiveMiB, 'image/jpeg');
    expect(big.status).toBe(200);
    expect(big.body.data.size).toBe(almostFiveMiB.length);
    const file = await new GridFSBucket(stack.mongo.db('compliance'), { bucketName: 'kycFiles' })
      .find({ _id: documentId as never })
      .toArray();
    expect(file[0]?.length).toBe(PNG.length);
    expect((await upload(documentId, PNG, 'image/png')).status).toBe(409);
    const noFile = await stack.restFetch(`/akepa/document/upload/${documentId}`, {
      method: 'POST',
      headers: { 'x-svc-token': svcToken },
      body: new FormData(),
    });
    expect(noFile.status).toBe(400);
  });

  it('lists in a stable order so that batches neither skip nor repeat, with total.more', async () => {
    // One customer with 7 applications, some created in the same millisecond.
    const created = new Date('2026-03-01T10:00:00.000Z');
    const docs = Array.from({ length: 7 }, (_, i) => ({
      _id: `batch_app_${i}`,
      applicationId: `batch_app_${i}`,
      svcAggregatorId: DEMO.aggregatorId,
      customerId: 'batch_customer',
      reference: null,
      status: 'pending_step_up',
      outcome: null,
      entityApplications: [],
      version: 0,
      dtsCreated: new Date(created.getTime() + Math.floor(i / 3) * 86_400_000),
      dtsUpdated: created,
    }));
    await stack.mongo.db('compliance').collection<(typeof docs)[number]>('applications').insertMany(docs);
    const seen: string[] = [];
    for (let skip = 0; skip < 10; skip += 3) {
      const page = await call<ListBody>('/akepa/list', { customerId: 'batch_customer', numberOfRecords: 3, skipRecords: skip });
      expect(page.status).toBe(200);
      seen.push(...page.body.data.items.map((item) => item.applicationId));
      expect(page.body.data.total).toEqual({ skipRecords: skip, numberOfRecords: page.body.data.items.length, more: skip + 3 < 7 });
    }
    expect(seen).toEqual(docs.map((d) => d.applicationId));
    const all = await call<ListBody>('/akepa/list', { customerId: 'batch_customer' });
    expect(all.body.data.items).toHaveLength(7);
    const dated = await call<ListBody>('/akepa/list', {
      customerId: 'batch_customer',
      dateCreateFrom: '2026-03-02',
      dateCreateTo: '2026-03-02',
    });
    expect(dated.body.data.items.map((i) => i.applicationId)).toEqual(['batch_app_3', 'batch_app_4', 'batch_app_5']);
  });

  it.each([
    [{ numberOfRecords: 0 }, 'numberOfRecords'],
    [{ numberOfRecords: 1001 }, 'numberOfRecords'],
    [{ skipRecords: -1 }, 'skipRecords'],
    [{}, 'customerId'],
    [{ dateCreateFrom: '2026-02-30' }, 'dateCreateFrom'],
  ])('refuses a list with %o', async (extra, field) => {
    const response = await call('/akepa/list', {
      customerId: 'batch_customer',
      ...extra,
      ...(field === 'customerId' ? { customerId: undefined } : {}),
    });
    expect(response.status).toBe(400);
    expect(response.body.field).toBe(field);
  });

  it("shows an aggregator only its own customers' applications, and lets a confined token read but not write", async () => {
    await stack.mongo
      .db('compliance')
      .collection<{ _id: string; applicationId: string; svcAggregatorId: string; customerId: string }>('applications')
      .insertOne({ _id: 'other_app', applicationId: 'other_app', svcAggregatorId: 'other_aggregator', customerId: 'shared_customer' });
    const list = await call<ListBody>('/akepa/list', { customerId: 'shared_customer' });
    expect(list.body.data.items).toEqual([]);
    const update = await call('/akepa/update', { customerId: 'shared_customer', applicationId: 'other_app', documents: [] });
    expect(update.status).toBe(404);
    const read = await call<ListBody>('/akepa/list', { customerId: 'demo_customer_1' }, confined);
    expect(read.status).toBe(200);
    expect(read.body.data.items[0]).toMatchObject({ status: 'completed', outcome: 'Approved' });
    const write = await call(
      '/akepa/customer/init',
      { customerId: 'by_confined', type: 'individual', individual: { firstName: 'C', lastName: 'C' } },
      confined,
    );
    expect(write.status).toBe(403);
  });
});
