import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErrorCode } from '../../platform/contracts/errors.js';
import { DEMO } from '../../platform/domain/demo.js';
import { signJwt } from '../../platform/security/jwt.js';
import { startWebhookReceiver } from '../../scripts/lib/webhook-receiver.js';
import { cardMessagesCollection } from '../../subgraphs/cards/src/authorization/datasource.js';
import { authorizeThrough, cardMessages, PROCESSOR_KEY } from '../support/card-messages.js';
import { startTestStack, type GraphQLBody, type TestStack } from '../support/harness.js';

const { message } = cardMessages(500000, 'SUM', { messageType: '0100' });
const HOUR = 60 * 60 * 1000;

const SUMMARY =
  'query ($since: DateTime!) { cardAuthorizationSummary(since: $since) { since asOf total approved declined approvalRate declineReasons { responseCode decidedBy reason count } } }';
const PAGE =
  'query ($since: DateTime!, $first: Int, $after: String) { cardAuthorizationsConnection(since: $since, first: $first, after: $after) { edges { cursor node { messageId responseCode dtsReceived card { lastFour } } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }';

interface Summary {
  since: string;
  asOf: string;
  total: number;
  approved: number;
  declined: number;
  approvalRate: number | null;
  declineReasons: Array<{ responseCode: string; decidedBy: string; reason: string; count: number }>;
}
interface Page {
  edges: Array<{
    cursor: string;
    node: { messageId: string; responseCode: string; dtsReceived: string; card: { lastFour: string } | null };
  }>;
  pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; startCursor: string | null; endCursor: string | null };
}

describe("a card program's and a user's recent authorizations: counted, and page by page", () => {
  let stack: TestStack;
  let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
  let aggregator: Record<string, string>;
  let user: Record<string, string>;
  /** The messages decided in the set-up, newest last. */
  const decided: string[] = [];
  /** A message of the set-up moved two days into the past: outside a 24-hour window, inside a 3-day one. */
  let older = '';

  const ago = (ms: number) => new Date(Date.now() - ms).toISOString();
  const summaryAs = async (headers: Record<string, string>, since = ago(24 * HOUR)) =>
    (await stack.graphql<{ cardAuthorizationSummary: Summary }>(SUMMARY, { since }, headers)).body;
  const pageAs = async (headers: Record<string, string>, variables: Record<string, unknown>) =>
    (await stack.graphql<{ cardAuthorizationsConnection: Page }>(PAGE, { since: ago(24 * HOUR), ...variables }, headers)).body;
  const refusal = (body: GraphQLBody) => body.errors?.[0]?.extensions?.code;

  beforeAll(async () => {
    receiver = await startWebhookReceiver(DEMO.webhook.secret);
    stack = await startTestStack({ SERVICE_KEYS: `card-processor=${PROCESSOR_KEY}` });
    await stack.mongo
      .db('cards')
      .collection('webhookConfigs')
      .updateOne({ _id: DEMO.aggregatorId as never }, { $set: { url: receiver.url, timeoutMs: 1000 } });
    const authorize = authorizeThrough(stack);
    // Three approved by the aggregator, one declined by it (05), two on the blocked second card (62).
    receiver.setMode({ reply: '00' });
    for (let i = 0; i < 3; i += 1) decided.push((await authorize(message())).messageId);
    receiver.setMode({ reply: '05' });
    decided.push((await authorize(message())).messageId);
    for (let i = 0; i < 2; i += 1) decided.push((await authorize(message({ svcCardId: DEMO.cardIds[1] }))).messageId);
    receiver.setMode({ reply: '00' });
    older = (await authorize(message())).messageId;
    await cardMessagesCollection(stack.mongo.db('cards')).updateOne(
      { _id: older },
      { $set: { dtsReceived: new Date(Date.now() - 48 * HOUR) } },
    );
    aggregator = {
      'x-svc-token': await stack.issueToken({
        kind: 'aggregator',
        svcAggregatorId: DEMO.aggregatorId,
        login: DEMO.aggregatorLogin,
        tokenType: 'confined',
      }),
    };
    user = { token: await stack.loginDemo() };
  }, 120_000);
  afterAll(async () => {
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- beforeAll may have failed before assigning it.
    await stack?.stop();
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- beforeAll may have failed before assigning it.
    await receiver?.close();
  });

  it("counts the card program's messages of the window for its aggregator (a confined token reads), approval rate and decline reasons included", async () => {
    const before = Date.now();
    const body = await summaryAs(aggregator);
    expect(body.errors).toBeUndefined();
    const summary = body.data!.cardAuthorizationSummary;
    expect(summary).toMatchObject({ total: 6, approved: 3, declined: 3, approvalRate: 50 });
    // Most frequent first.
    expect(summary.declineReasons).toEqual([
      { responseCode: '62', decidedBy: 'card', reason: 'The card is off (blocked): no transaction is authorized.', count: 2 },
      { responseCode: '05', decidedBy: 'aggregator', reason: 'Declined by the aggregator (05).', count: 1 },
    ]);
    expect(new Date(summary.asOf).getTime()).toBeGreaterThanOrEqual(before - 1000);
    // A wider window takes in the message of two days ago.
    const wider = (await summaryAs(aggregator, ago(72 * HOUR))).data!.cardAuthorizationSummary;
    expect(wider).toMatchObject({ total: 7, approved: 4, declined: 3, approvalRate: 57.14 });
  });

  it('counts the same messages for the user whose cards they are, and none for another user or another aggregator', async () => {
    expect((await summaryAs(user)).data!.cardAuthorizationSummary).toMatchObject({ total: 6, approved: 3, declined: 3 });
    const otherUser = { token: await stack.issueUserToken(DEMO.friendUserId) };
    expect((await summaryAs(otherUser)).data!.cardAuthorizationSummary).toMatchObject({
      total: 0,
      approved: 0,
      declined: 0,
      approvalRate: null,
      declineReasons: [],
    });
    const otherAggregator = {
      'x-svc-token': await stack.issueToken({
        kind: 'aggregator',
        svcAggregatorId: 'rival_aggregator',
        login: 'rival_ops',
        tokenType: 'base',
      }),
    };
    expect((await summaryAs(otherAggregator)).data!.cardAuthorizationSummary.total).toBe(0);
    const page = (await pageAs(otherAggregator, {})).data!.cardAuthorizationsConnection;
    expect(page.edges).toEqual([]);
    expect(page.pageInfo).toEqual({ hasNextPage: false, hasPreviousPage: false, startCursor: null, endCursor: null });
  });

  it('refuses anonymous callers, merchants, prospects and the card processor, before it looks at the window', async () => {
    const merchant = {
      'x-svc-jwtoken': await signJwt({ typ: 'merchant', sub: DEMO.merchantId, agg: DEMO.aggregatorId }, stack.config.jwtSecret),
    };
    const tooOld = ago(30 * 24 * HOUR);
    for (const headers of [{}, merchant]) {
      for (const since of [ago(HOUR), tooOld]) {
        const summary = (await stack.graphql(SUMMARY, { since }, headers)).body;
        expect(refusal(summary)).toBe(ErrorCode.UNAUTHENTICATED);
        expect(summary.data ?? null).toBeNull();
        const page = (await stack.graphql(PAGE, { since }, headers)).body;
        expect(refusal(page)).toBe(ErrorCode.UNAUTHENTICATED);
      }
    }
    // The card processor's key is for deciding messages, not reading them: the gateway holds it to its scope.
    const processor = await stack.graphql(SUMMARY, { since: ago(HOUR) }, { 'x-service-key': PROCESSOR_KEY });
    expect(processor.status).toBe(403);
    expect(refusal(processor.body)).toBe(ErrorCode.FORBIDDEN);
  });

  it('refuses a window that starts more than 7 days back, naming since', async () => {
    for (const query of [SUMMARY, PAGE]) {
      const body = (await stack.graphql(query, { since: ago(7 * 24 * HOUR + 60_000) }, user)).body;
      expect(body.errors?.[0]).toMatchObject({
        message: 'since may be at most 7 days back.',
        extensions: { code: ErrorCode.VALIDATION_FAILED, field: 'since' },
      });
    }
    expect((await summaryAs(user, ago(7 * 24 * HOUR - 60_000))).errors).toBeUndefined();
    expect(refusal((await stack.graphql(SUMMARY, { since: 'yesterday' }, user)).body)).toBe(ErrorCode.VALIDATION_FAILED);
  });

  it('pages the messages newest first with cursors; the user sees each card, the aggregator the message only', async () => {
    const seen: string[] = [];
    let after: string | null = null;
    for (let pages = 0; pages < 4; pages += 1) {
      const body = await pageAs(user, { first: 2, after });
      expect(body.errors).toBeUndefined();
      const page: Page = body.data!.cardAuthorizationsConnection;
      expect(page.pageInfo.hasPreviousPage).toBe(after !== null);
      for (const edge of page.edges) {
        seen.push(edge.node.messageId);
        expect(edge.node.card?.lastFour).toMatch(/^\d{4}$/);
      }
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor;
    }
    expect(seen).toEqual([...decided].reverse());
    const asAggregator = (await pageAs(aggregator, { first: 100 })).data!.cardAuthorizationsConnection;
    expect(asAggregator.edges.map((edge) => edge.node.messageId)).toEqual([...decided].reverse());
    expect(asAggregator.edges.every((edge) => edge.node.card === null)).toBe(true);
    const times = asAggregator.edges.map((edge) => Date.parse(edge.node.dtsReceived));
    expect(times).toEqual([...times].sort((a, b) => b - a));
  });

  it('refuses a page size out of bounds and a cursor it did not write, naming the argument', async () => {
    for (const first of [0, 1001]) {
      const body = await pageAs(user, { first });
      expect(body.errors?.[0]?.extensions).toMatchObject({ code: ErrorCode.VALIDATION_FAILED, field: 'first' });
    }
    for (const after of [
      'not-a-cursor',
      Buffer.from('offset:3').toString('base64url'),
      Buffer.from(`2026-01-01T00:00:00.000Z|`).toString('base64url'),
    ]) {
      const body = await pageAs(user, { after });
      expect(body.errors?.[0]?.extensions).toMatchObject({ code: ErrorCode.VALIDATION_FAILED, field: 'after' });
    }
  });

  it('leaves out of the figures a message received after them, which a client adds from its event', async () => {
    const summary = (await summaryAs(aggregator)).data!.cardAuthorizationSummary;
    const later = await authorizeThrough(stack)(message());
    const stored = await cardMessagesCollection(stack.mongo.db('cards')).findOne({ _id: later.messageId });
    expect(stored!.dtsReceived.getTime()).toBeGreaterThan(Date.parse(summary.asOf));
    expect((await summaryAs(aggregator)).data!.cardAuthorizationSummary.total).toBe(summary.total + 1);
  });
});
