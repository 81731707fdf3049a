import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { start as startGateway, type GatewayService } from '../../gateway/src/index.js';
import { DEMO } from '../../platform/domain/demo.js';
import { comparePositions, createEventBus, type EventBus, type LoggedEvent } from '../../platform/messaging/event-bus.js';
import { freePort } from '../../platform/mongo/ferretdb.js';
import { configFor } from '../../platform/runtime/config-slices.js';
import { createLogger } from '../../platform/runtime/logger.js';
import { subgraphUrlsOf } from '../../scripts/stack.js';
import { launchChromium } from '../support/browser.js';
import { authorizeAt, cardMessages } from '../support/card-messages.js';
import { startTestStack, until, type TestStack } from '../support/harness.js';

// The dashboard's gateway is one of its own beside the stack's (which the REST adapter calls), as
// another process would be: with its own connection to the Redis log, stopped as a deploy stops it
// and started again on the same port, so that the page reconnects to the same URL.
const REDIS_URL = 'redis://127.0.0.1:6379';
const { message } = cardMessages(810000, 'DRS', { messageType: '0100' });
/** Events published while the gateway is down: card status changes, and authorizations decided by the cards subgraph itself. */
const MISSED_STATUSES = 5;
const MISSED_AUTHORIZATIONS = 2;
const LIVE_AFTER = 3;

/** A row of the event list, as the page shows it. */
interface Row {
  kind: string;
  position: string | null;
  detail: string;
}

/** Evaluates an expression in the page and parses its JSON (the tests compile without the DOM's types). */
async function inPage<T>(page: Page, expression: string): Promise<T> {
  return JSON.parse(await page.evaluate<string>(`JSON.stringify(${expression})`)) as T;
}
const eventRows = (page: Page) =>
  inPage<Row[]>(
    page,
    `[...document.querySelectorAll('#events li')].map((li) => ({ kind: li.dataset.kind, position: li.dataset.position || null, detail: li.querySelector('small').textContent }))`,
  );
/** Every change of the status line from now on, as "<phase> | <text>". */
const RECORD_STATUS = `(() => {
  const status = document.querySelector('#status');
  window.statusHistory = [];
  const note = () => {
    const seen = status.dataset.phase + ' | ' + status.textContent;
    if (window.statusHistory.at(-1) !== seen) window.statusHistory.push(seen);
  };
  note();
  new MutationObserver(note).observe(status, { childList: true, characterData: true, subtree: true, attributes: true });
})()`;

describe('the dashboard across a restart of its gateway', () => {
  let stack: TestStack;
  let browser: Browser;
  let watcher: EventBus | undefined;
  let running: { gateway: GatewayService; bus: EventBus } | undefined;
  let port: number;
  /** Every event of the log, with its position, as a reader of the log sees it. */
  const logged: LoggedEvent[] = [];
  const gatewayLogs: Array<Record<string, unknown>> = [];

  const startDashboardGateway = async () => {
    const logger = createLogger('info', {}, (line) => gatewayLogs.push(JSON.parse(line) as Record<string, unknown>));
    const bus = createEventBus(REDIS_URL, logger, stack.config.dbPrefix, stack.config.eventRetention);
    const gateway = await startGateway({
      config: configFor('gateway', { ...stack.config, subgraphUrls: subgraphUrlsOf(stack.subgraphs) }),
      logger,
      bus,
      port,
    });
    running = { gateway, bus };
    return gateway;
  };
  const stopDashboardGateway = async () => {
    const { gateway, bus } = running!;
    running = undefined;
    await gateway.close();
    await bus.close();
  };

  beforeAll(async () => {
    stack = await startTestStack({ REDIS_URL });
    watcher = createEventBus(REDIS_URL, createLogger('silent'), stack.config.dbPrefix, stack.config.eventRetention);
    watcher.subscribe((event) => logged.push(event));
    await watcher.ready();
    browser = await launchChromium();
    port = await freePort();
    await startDashboardGateway();
  }, 240_000);
  afterAll(async () => {
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- beforeAll may have failed before assigning it.
    await browser?.close();
    if (running) await stopDashboardGateway();
    await watcher?.close();
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- beforeAll may have failed before assigning it.
    await stack?.stop();
  });

  let published = 0;
  /** A card status change of the demo user's first card, appended to the log without any gateway. */
  const publishStatus = async () => {
    published += 1;
    const id = `evt_dash_restart_${stack.config.dbPrefix}${published}`;
    await stack.bus.publish({
      id,
      type: 'card.status',
      audience: { SvcUserId: DEMO.userId },
      payload: { SvcCardId: DEMO.cardIds[0], status: 'active', isActive: true },
      dtsCreated: new Date().toISOString(),
    });
    return id;
  };
  /** A card message decided by the cards subgraph itself (no gateway), whose event its outbox appends to the log. */
  const authorize = async () => (await authorizeAt(stack.subgraphs.cards, stack.config.internalSecret)(message())).messageId;
  const authorizationOf = (messageId: string) =>
    logged.find((event) => event.type === 'card.authorization' && event.payload.messageId === messageId);
  const inLog = (ids: string[], messageIds: string[]) =>
    until(
      async () => ids.every((id) => logged.some((event) => event.id === id)) && messageIds.every((id) => authorizationOf(id)),
      (all) => all,
      15_000,
    );

  it('lists every event published while the gateway was down exactly once and in order, then goes on live', async () => {
    const page = await browser.newPage();
    const requestsFailed: string[] = [];
    const pageErrors: string[] = [];
    const consoleErrors: Array<{ text: string; outage: boolean }> = [];
    /** From the gateway's stop until the page has caught up: the page's failed attempts to connect are expected then. */
    let outage = false;
    page.on('requestfailed', (request) => requestsFailed.push(`${request.url()}: ${request.failure()?.errorText ?? ''}`));
    page.on('response', (response) => {
      if (response.status() >= 400) requestsFailed.push(`${response.url()}: ${response.status()}`);
    });
    page.on('pageerror', (error) => pageErrors.push(error.message));
    page.on('console', (entry) => {
      if (entry.type() === 'error') consoleErrors.push({ text: `${entry.location().url}: ${entry.text()}`, outage });
    });

    await page.goto(`http://127.0.0.1:${port}/dashboard`);
    await page.selectOption('#role', 'user');
    await page.fill('#password', DEMO.password);
    await page.press('#password', 'Enter');
    await page.locator('#status', { hasText: /^Live/ }).waitFor({ timeout: 20_000 });
    await until(
      async () => running!.gateway.subscribers(),
      (n) => n >= 2,
      15_000,
    );

    // One event on each subscription first: each has a position to resume from, so nothing needs the queries again.
    const statusIds = [await publishStatus()];
    const accountsRead = () => {
      const read = page.waitForResponse(
        (response) => response.url().endsWith('/graphql') && (response.request().postData() ?? '').includes('UserDashboardAccounts'),
        { timeout: 40_000 },
      );
      // Awaited later; a test failing before then must not leave it unhandled.
      read.catch(() => {});
      return read;
    };
    let refreshed = accountsRead();
    const messageIds = [await authorize()];
    await inLog(statusIds, messageIds);
    await until(
      async () => (await eventRows(page)).filter((row) => row.position !== null).length,
      (n) => n === 2,
      15_000,
    );
    // An authorization makes the page read the accounts a moment later: done before the outage, it cannot fail in it.
    await refreshed;
    const totalBefore = Number(await page.locator('#auth-total').innerText());
    await page.evaluate(RECORD_STATUS);

    outage = true;
    await stopDashboardGateway();
    await page.locator('#status[data-phase="reconnecting"]').waitFor({ timeout: 10_000 });
    for (let i = 0; i < MISSED_STATUSES; i += 1) statusIds.push(await publishStatus());
    for (let i = 0; i < MISSED_AUTHORIZATIONS; i += 1) messageIds.push(await authorize());
    await inLog(statusIds, messageIds);
    // The page tries again while nothing listens on the port, and must keep trying.
    await until(
      async () => consoleErrors.filter((entry) => entry.text.includes(`ws://127.0.0.1:${port}/graphql`)).length,
      (n) => n > 0,
      20_000,
    );
    refreshed = accountsRead();
    await startDashboardGateway();

    await until(
      () => page.locator('#status').innerText(),
      (text) => text === `Live · caught up ${MISSED_STATUSES + MISSED_AUTHORIZATIONS} events`,
      30_000,
    );
    outage = false;
    for (let i = 0; i < LIVE_AFTER; i += 1) statusIds.push(await publishStatus());
    await inLog(statusIds, messageIds);
    await until(
      async () => (await eventRows(page)).filter((row) => row.kind === 'card').length,
      (n) => n >= statusIds.length,
      15_000,
    );
    await refreshed;

    const rows = await eventRows(page);
    // The gateway reads the card as it is now, so the rows of its changes differ by their position alone: newest first.
    const statusPositions = statusIds.map((id) => logged.find((event) => event.id === id)!.position);
    expect(rows.filter((row) => row.kind === 'card').map((row) => row.position)).toEqual(
      [...statusPositions].sort(comparePositions).reverse(),
    );
    for (const messageId of messageIds) {
      const listed = rows.filter((row) => row.kind === 'authorization' && row.detail.startsWith(`${messageId} `));
      expect(
        listed.map((row) => row.position),
        messageId,
      ).toEqual([authorizationOf(messageId)!.position]);
    }
    expect(rows.filter((row) => row.kind === 'error')).toEqual([]);
    // Each event was applied once: the page's count of events received, and the authorizations' tally.
    expect(await page.locator('#events').getAttribute('data-received')).toBe(String(statusIds.length + messageIds.length));
    expect(Number(await page.locator('#auth-total').innerText())).toBe(totalBefore + MISSED_AUTHORIZATIONS);

    const history = await inPage<string[]>(page, 'window.statusHistory');
    const phases = history.map((entry) => entry.split(' | ')[0]).filter((phase, i, all) => phase !== all[i - 1]);
    expect(phases, history.join('\n')).toEqual(['live', 'reconnecting', 'catching up', 'live']);
    expect(history.at(-1)).toBe(`live | Live · caught up ${MISSED_STATUSES + MISSED_AUTHORIZATIONS} events`);

    // Nothing failed but the page's attempts to reconnect while the port was closed.
    expect(requestsFailed).toEqual([]);
    expect(pageErrors).toEqual([]);
    expect(consoleErrors.filter((entry) => !entry.outage || !entry.text.includes(`ws://127.0.0.1:${port}/graphql`))).toEqual([]);
    await page.close();
  }, 120_000);
});
