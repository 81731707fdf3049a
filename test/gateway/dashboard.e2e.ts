import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO } from '../../platform/domain/demo.js';
import { startWebhookReceiver } from '../../scripts/lib/webhook-receiver.js';
import { launchChromium } from '../support/browser.js';
import { authorizeThrough, cardMessages, PROCESSOR_KEY } from '../support/card-messages.js';
import { startTestStack, until, type TestStack } from '../support/harness.js';

const { message } = cardMessages(800000, 'DSH', { messageType: '0100' });
/** A merchant whose webhook endpoint refuses every delivery: one attempt each (WEBHOOK_RETRY_SCHEDULE=0), disabled after two. */
const FAILING_MERCHANT = 'failing_shop';
const CLOSED_PORT_URL = 'http://127.0.0.1:9/hook';

interface Envelope<T> {
  data: T;
}

/**
 * Evaluates an expression in the page and parses its JSON: the page's side is written as text,
 * since the tests compile without the DOM's types.
 */
async function inPage<T>(page: Page, expression: string): Promise<T> {
  return JSON.parse(await page.evaluate<string>(`JSON.stringify(${expression})`)) as T;
}
const focused = (page: Page) => inPage<string | null>(page, 'document.activeElement ? document.activeElement.id : null');

/** The elements with text of their own that show, and those whose colour has a contrast under 4.5:1 with the background behind it (WCAG's formula). */
const LOW_CONTRAST = `(() => {
  const rgb = (color) => (color.match(/[\\d.]+/g) || []).map(Number);
  const channel = (c) => { const s = c / 255; return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4; };
  const luminance = ([r, g, b]) => 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
  const background = (node) => {
    for (let at = node; at; at = at.parentElement) {
      const [r, g, b, a = 1] = rgb(getComputedStyle(at).backgroundColor);
      if (a > 0) return [r, g, b];
    }
    return [255, 255, 255];
  };
  const found = [];
  let checked = 0;
  for (const node of document.querySelectorAll('body *')) {
    const own = [...node.childNodes].some((child) => child.nodeType === Node.TEXT_NODE && child.textContent.trim());
    if (!own || !node.offsetParent || node.tagName === 'OPTION') continue;
    checked += 1;
    const fg = luminance(rgb(getComputedStyle(node).color));
    const bg = luminance(background(node));
    const ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
    if (ratio < 4.5) found.push(node.tagName + '#' + node.id + '.' + node.className + ': ' + ratio.toFixed(2) + ' ' + node.textContent.trim().slice(0, 30));
  }
  return { checked, found };
})()`;

describe('the dashboard in a real browser: state through queries, then events', () => {
  let stack: TestStack;
  let browser: Browser;
  let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
  let aggregatorToken: string;
  const authorize = (overrides: Record<string, unknown> = {}) => authorizeThrough(stack)(message(overrides));

  const merchantJwt = async (svcMerchantId: string) =>
    (
      await stack.rest<Envelope<{ token: string }>>('POST', '/payment-link/merchant/get-token', {
        headers: { 'x-svc-token': aggregatorToken },
        body: { svcMerchantId },
      })
    ).body.data.token;
  const createLink = async (jwt: string) =>
    (
      await stack.rest<Envelope<{ svcTransactionId: string }>>('POST', '/public/merchant/payment/create', {
        headers: { 'x-svc-jwtoken': jwt },
        body: {
          amount: 30,
          currency: 'USD',
          payerName: 'Pat Payer',
          fields: [{ index: 0, code: 'email', label: 'Email', value: 'pat@example.com' }],
        },
      })
    ).body.data.svcTransactionId;
  const sendLink = (jwt: string, svcTransactionId: string) =>
    stack.rest('POST', '/public/merchant/payment/send', { headers: { 'x-svc-jwtoken': jwt }, body: { svcTransactionId } });
  const asAggregator = async <T>(query: string) => {
    const response = await stack.graphql<T>(query, {}, { 'x-svc-token': aggregatorToken });
    if (response.body.errors) throw new Error(JSON.stringify(response.body.errors));
    return response.body.data!;
  };

  /** Opens the dashboard and logs in with the keyboard alone: Tab to each control, a letter to choose the role, Enter to submit. */
  const logInByKeyboard = async (page: Page, role: 'aggregator' | 'user', subscriptions: number) => {
    const before = stack.gateway.subscribers();
    await page.goto(`${stack.gateway.url}/dashboard`);
    await page.keyboard.press('Tab');
    expect(await focused(page)).toBe('role');
    if (role === 'user') await page.keyboard.press('e');
    expect(await page.locator('#role').inputValue()).toBe(role);
    await page.keyboard.press('Tab');
    expect(await focused(page)).toBe('login');
    expect(await page.locator('#login').inputValue()).toBe(role === 'user' ? DEMO.userName : DEMO.aggregatorLogin);
    await page.keyboard.press('Tab');
    await page.keyboard.type(role === 'user' ? DEMO.password : DEMO.aggregatorPassword);
    await page.keyboard.press('Enter');
    await page.locator('#status', { hasText: /^Live/ }).waitFor({ timeout: 20_000 });
    // Subscribing is asynchronous: an event before the gateway holds the subscription would not reach it.
    await until(
      async () => stack.gateway.subscribers(),
      (n) => n >= before + subscriptions,
      15_000,
    );
  };
  const text = (page: Page, selector: string) => page.locator(selector).innerText();
  /** The rows of a table's body that show, each as its cells' text. */
  const rows = (page: Page, selector: string) =>
    inPage<string[][]>(
      page,
      `[...document.querySelectorAll(${JSON.stringify(`${selector} tbody tr:not([hidden])`)})].map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent.trim()))`,
    );
  const countOf = async (page: Page, status: string) => (await rows(page, '#link-statuses')).find(([name]) => name === status)?.[1];
  /** The events the filters show: their kind and card. */
  const visibleEvents = (page: Page) =>
    inPage<Array<{ kind?: string; card?: string }>>(
      page,
      `[...document.querySelectorAll('#events li:not([hidden])')].map((li) => ({ kind: li.dataset.kind, card: li.dataset.card }))`,
    );

  beforeAll(async () => {
    receiver = await startWebhookReceiver(DEMO.webhook.secret);
    stack = await startTestStack({
      SERVICE_KEYS: `card-processor=${PROCESSOR_KEY}`,
      WEBHOOK_RETRY_SCHEDULE: '0',
      WEBHOOK_DISABLE_AFTER: '2',
    });
    browser = await launchChromium();
    await stack.mongo
      .db('cards')
      .collection('webhookConfigs')
      .updateOne({ _id: DEMO.aggregatorId as never }, { $set: { url: receiver.url, timeoutMs: 1000 } });
    aggregatorToken = await stack.issueToken({
      kind: 'aggregator',
      svcAggregatorId: DEMO.aggregatorId,
      login: DEMO.aggregatorLogin,
      tokenType: 'base',
    });
    // The state the dashboard opens on: three approvals on the first card, two declines on the blocked second one (62)...
    receiver.setMode({ reply: '00' });
    for (let i = 0; i < 3; i += 1) await authorize();
    for (let i = 0; i < 2; i += 1) await authorize({ svcCardId: DEMO.cardIds[1] });
    // ...and a merchant whose endpoint fails: two deliveries given up, which disables it, and one paused behind it.
    await asAggregator(
      `mutation { saveMerchant(input: { svcMerchantId: "${FAILING_MERCHANT}", name: "Failing Frames", linkDelivery: webhook, webhookUrl: "${CLOSED_PORT_URL}" }) { webhookSecret } }`,
    );
    const jwt = await merchantJwt(FAILING_MERCHANT);
    for (let i = 0; i < 3; i += 1) {
      await sendLink(jwt, await createLink(jwt));
      await until(
        () =>
          stack.mongo
            .db('payments')
            .collection('deliveries')
            .countDocuments({ svcMerchantId: FAILING_MERCHANT, status: { $ne: 'pending' } }),
        (n) => n > i,
      );
    }
  }, 240_000);
  afterAll(async () => {
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- beforeAll may have failed before assigning it.
    await browser?.close();
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- beforeAll may have failed before assigning it.
    await stack?.stop();
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- beforeAll may have failed before assigning it.
    await receiver?.close();
  });

  it("shows an aggregator's state on open: authorizations of 24 h, links by status, ACH rates against their thresholds, deliveries failing", async () => {
    const page = await browser.newPage({ viewport: { width: 1360, height: 900 } });
    const failed: string[] = [];
    page.on('requestfailed', (request) => failed.push(request.url()));
    page.on('pageerror', (error) => failed.push(error.message));
    await logInByKeyboard(page, 'aggregator', 5);
    await page.locator('#auth-total', { hasText: '5' }).waitFor({ timeout: 15_000 });
    expect([await text(page, '#auth-approved'), await text(page, '#auth-declined'), await text(page, '#auth-rate')]).toEqual([
      '3',
      '2',
      '60.00 %',
    ]);
    expect(await rows(page, '#decline-reasons')).toEqual([['62', 'card', 'The card is off (blocked): no transaction is authorized.', '2']]);

    const { paymentLinkStatusCounts } = await asAggregator<{
      paymentLinkStatusCounts: { total: number; statuses: Array<{ status: string; count: number }> };
    }>('{ paymentLinkStatusCounts { total statuses { status count } } }');
    expect(await rows(page, '#link-statuses')).toEqual(paymentLinkStatusCounts.statuses.map((s) => [s.status, String(s.count)]));
    expect(await text(page, '#links-total')).toBe(String(paymentLinkStatusCounts.total));

    const { achReturnRatesConnection } = await asAggregator<{
      achReturnRatesConnection: { edges: Array<{ node: { returnRates: Record<string, number> } }> };
    }>(
      '{ achReturnRatesConnection(first: 1) { edges { node { returnRates { unAuthorizedRate unAuthorizedDaysOver adminRate adminDaysOver totalRate totalDaysOver } } } } }',
    );
    const report = achReturnRatesConnection.edges[0]!.node.returnRates;
    const status = (rate: number, threshold: number) => (rate >= threshold ? 'Over' : 'Within');
    expect(await rows(page, '#ach-rates')).toEqual([
      [
        'Unauthorized',
        `${report.unAuthorizedRate!.toFixed(2)} %`,
        '0.5 %',
        status(report.unAuthorizedRate!, 0.5),
        String(report.unAuthorizedDaysOver),
      ],
      ['Administrative', `${report.adminRate!.toFixed(2)} %`, '3 %', status(report.adminRate!, 3), String(report.adminDaysOver)],
      ['Overall', `${report.totalRate!.toFixed(2)} %`, '15 %', status(report.totalRate!, 15), String(report.totalDaysOver)],
    ]);

    const failing = await rows(page, '#failing-deliveries');
    expect(
      failing
        .filter(([what]) => what!.startsWith(`Merchant ${FAILING_MERCHANT}, webhook:`))
        .map(([, state]) => state)
        .sort(),
    ).toEqual(['failed', 'failed', 'paused']);
    expect(await text(page, '#disabled-endpoints')).toContain('Failing Frames');
    // The window's latest messages are listed as events already.
    expect((await visibleEvents(page)).filter((e) => e.kind === 'authorization')).toHaveLength(5);
    // Only the gateway's own files and sockets: no CDN.
    expect(failed).toEqual([]);
    if (process.env.DASHBOARD_SCREENSHOT) {
      await page.evaluate('document.activeElement && document.activeElement.blur()');
      await page.screenshot({ path: process.env.DASHBOARD_SCREENSHOT, fullPage: true });
    }
    await page.close();
  });

  it('applies events as they arrive: an authorization to the counts and the rate, a payment link status change to the counts by status', async () => {
    const page = await browser.newPage();
    await logInByKeyboard(page, 'aggregator', 5);
    await page.locator('#auth-total', { hasText: '5' }).waitFor({ timeout: 15_000 });
    await authorize();
    await page.locator('#auth-total', { hasText: '6' }).waitFor({ timeout: 15_000 });
    expect([await text(page, '#auth-approved'), await text(page, '#auth-rate')]).toEqual(['4', '66.67 %']);
    await authorize({ svcCardId: DEMO.cardIds[1] });
    await page.locator('#auth-declined', { hasText: '3' }).waitFor({ timeout: 15_000 });
    expect(await rows(page, '#decline-reasons')).toEqual([['62', 'card', 'The card is off (blocked): no transaction is authorized.', '3']]);
    expect(await page.locator('#chart').getAttribute('data-declined')).toBe('3');

    const initiated = Number(await countOf(page, 'Initiated'));
    const sent = Number(await countOf(page, 'Sent'));
    const jwt = await merchantJwt(DEMO.merchantId);
    const link = await createLink(jwt);
    await until(
      async () => Number(await countOf(page, 'Initiated')),
      (n) => n === initiated + 1,
      15_000,
    );
    expect((await sendLink(jwt, link)).status).toBe(200);
    await until(
      async () => Number(await countOf(page, 'Sent')),
      (n) => n === sent + 1,
      15_000,
    );
    expect(Number(await countOf(page, 'Initiated'))).toBe(initiated);
    // The counts the page moved are the ones the query reads now.
    const { paymentLinkStatusCounts } = await asAggregator<{
      paymentLinkStatusCounts: { statuses: Array<{ status: string; count: number }> };
    }>('{ paymentLinkStatusCounts { statuses { status count } } }');
    expect(await rows(page, '#link-statuses')).toEqual(paymentLinkStatusCounts.statuses.map((s) => [s.status, String(s.count)]));
    await page.locator('#events li.payment-link', { hasText: 'is Sent' }).first().waitFor();
    await page.close();
  });

  it('filters the events by kind and by card, with the keyboard', async () => {
    const page = await browser.newPage();
    await logInByKeyboard(page, 'aggregator', 5);
    await page.locator('#auth-total', { hasText: /\d/ }).waitFor({ timeout: 15_000 });
    const jwt = await merchantJwt(DEMO.merchantId);
    await createLink(jwt);
    await page.locator('#events li.payment-link').first().waitFor({ timeout: 15_000 });
    const all = await visibleEvents(page);
    expect(new Set(all.map((e) => e.kind))).toEqual(new Set(['authorization', 'payment-link']));

    // The card filter: focused with Tab from the kinds, a key chooses the first card; events of no card or another card hide.
    await page.focus('#kind-filter input[value="error"]');
    await page.keyboard.press('Tab');
    expect(await focused(page)).toBe('card-filter');
    await page.keyboard.press('ArrowDown');
    const card = await page.locator('#card-filter').inputValue();
    expect(card).not.toBe('');
    const ofCard = await visibleEvents(page);
    expect(ofCard.length).toBeGreaterThan(0);
    expect(ofCard.every((e) => e.card === card)).toBe(true);
    expect(ofCard.length).toBe(all.filter((e) => e.card === card).length);
    await page.keyboard.press('ArrowUp');
    expect(await page.locator('#card-filter').inputValue()).toBe('');
    expect(await visibleEvents(page)).toEqual(all);

    // The kinds: Shift+Tab back to them, Space unchecks authorizations, and only the payment links are left.
    await page.focus('#kind-filter input[value="authorization"]');
    await page.keyboard.press('Space');
    expect(await page.locator('#kind-filter input[value="authorization"]').isChecked()).toBe(false);
    const linksOnly = await visibleEvents(page);
    expect(linksOnly.length).toBe(all.filter((e) => e.kind === 'payment-link').length);
    expect(linksOnly.every((e) => e.kind === 'payment-link')).toBe(true);
    await page.keyboard.press('Space');
    expect(await visibleEvents(page)).toEqual(all);
    // Every control is named by its label.
    for (const id of ['role', 'login', 'password', 'card-filter']) expect(await page.locator(`label[for="${id}"]`).count(), id).toBe(1);
    expect(await page.getByLabel('Authorizations', { exact: true }).count()).toBe(1);
    await page.close();
  });

  it("shows an end user's cards, balance and latest transactions, and updates a card on its status event", async () => {
    const page = await browser.newPage();
    await logInByKeyboard(page, 'user', 2);
    await page.locator('#cards tbody tr').nth(1).waitFor({ timeout: 15_000 });
    expect(await rows(page, '#cards')).toEqual([
      ['Everyday', '…4821', 'active'],
      ['Online shopping', '…7730', 'blocked'],
    ]);
    const token = await stack.loginDemo();
    const me = await stack.graphql<{
      me: { accounts: Array<{ name: string; balance: string; availableBalance: string; currency: string }> };
    }>('{ me { accounts { name balance availableBalance currency } } }', {}, { token });
    expect(await rows(page, '#accounts')).toEqual(
      me.body.data!.me.accounts.map((a) => [a.name, `${a.balance} ${a.currency}`, `${a.availableBalance} ${a.currency}`]),
    );
    expect((await rows(page, '#transactions')).length).toBeGreaterThan(3);
    // The user's own messages of the window: the seven of the tests above.
    expect(await text(page, '#auth-total')).toBe('7');

    expect((await stack.rest('POST', `/cards/${DEMO.cardIds[0]}/off`, { headers: { token } })).status).toBe(200);
    await until(
      async () => (await rows(page, '#cards'))[0]?.[2],
      (status) => status === 'blocked',
      15_000,
    );
    await page.locator('#events li.card', { hasText: 'is blocked' }).first().waitFor();
    await stack.rest('POST', `/cards/${DEMO.cardIds[0]}/on`, { headers: { token } });
    await until(
      async () => (await rows(page, '#cards'))[0]?.[2],
      (status) => status === 'active',
      15_000,
    );

    // An authorization event: the user's counts, and the card filter narrows to the card's events.
    await authorize({ svcCardId: DEMO.cardIds[1] });
    await page.locator('#auth-total', { hasText: '8' }).waitFor({ timeout: 15_000 });
    await page.selectOption('#card-filter', DEMO.cardIds[1]);
    const shown = await visibleEvents(page);
    expect(shown.length).toBeGreaterThan(0);
    expect(shown.every((e) => e.card === DEMO.cardIds[1])).toBe(true);
    await page.close();
  });

  it('keeps every text at a contrast of at least 4.5:1 against its background, for both roles', async () => {
    for (const [role, subscriptions] of [
      ['aggregator', 5],
      ['user', 2],
    ] as const) {
      const page = await browser.newPage();
      await logInByKeyboard(page, role, subscriptions);
      await page.locator('#auth-total', { hasText: /\d/ }).waitFor({ timeout: 15_000 });
      const { checked, found } = await inPage<{ checked: number; found: string[] }>(page, LOW_CONTRAST);
      expect(checked, role).toBeGreaterThan(40);
      expect(found, role).toEqual([]);
      await page.close();
    }
  });

  it('serves GraphiQL from local files in development', async () => {
    const page = await browser.newPage();
    const external: string[] = [];
    page.on('request', (request) => {
      if (!request.url().startsWith(stack.gateway.url) && !request.url().startsWith('data:')) external.push(request.url());
    });
    await page.goto(`${stack.gateway.url}/graphiql`);
    await page.locator('.graphiql-container').waitFor({ timeout: 20_000 });
    expect(external).toEqual([]);
    await page.close();
  });
});
