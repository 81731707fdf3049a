import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO } from '../../platform/domain/demo.js';
import { launchChromium } from '../support/browser.js';
import { startTestStack, type TestStack } from '../support/harness.js';

const PROCESSOR_KEY = 'card-processor-key-for-the-dashboard-test';

describe('the live dashboard in a real browser', () => {
  let stack: TestStack;
  let browser: Browser;

  /** Opens the dashboard, logs in as the demo user and waits until its subscriptions are live. */
  const connectAsDemoUser = async (page: Page) => {
    await page.goto(`${stack.gateway.url}/dashboard`);
    await page.selectOption('#role', 'user');
    await page.fill('#login', DEMO.userName);
    await page.fill('#password', DEMO.password);
    await page.click('button[type=submit]');
    await page.locator('#status', { hasText: /^Connected/ }).waitFor({ timeout: 15_000 });
    await page.waitForTimeout(300);
  };

  beforeAll(async () => {
    stack = await startTestStack({ SERVICE_KEYS: `card-processor=${PROCESSOR_KEY}` });
    browser = await launchChromium();
  }, 240_000);
  afterAll(async () => {
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- beforeAll may have failed before assigning it.
    await browser?.close();
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- beforeAll may have failed before assigning it.
    await stack?.stop();
  });

  it('logs in as the demo user, subscribes, and shows a card status change made through the REST adapter', async () => {
    const page = await browser.newPage();
    const failed: string[] = [];
    page.on('requestfailed', (request) => failed.push(request.url()));
    page.on('pageerror', (error) => failed.push(error.message));
    await connectAsDemoUser(page);
    const token = await stack.loginDemo();
    expect((await stack.rest('POST', `/cards/${DEMO.cardIds[0]}/off`, { headers: { token } })).status).toBe(200);
    const event = page.locator('#events li.card').first();
    await event.waitFor({ timeout: 15_000 });
    expect(await event.textContent()).toContain('is blocked');
    await stack.rest('POST', `/cards/${DEMO.cardIds[0]}/on`, { headers: { token } });
    await page.locator('#events li.card', { hasText: 'is active' }).first().waitFor({ timeout: 15_000 });
    // Everything the page loaded came from the gateway itself.
    expect(failed).toEqual([]);
    await page.close();
  });

  it('counts an authorization decline in the per-minute chart', async () => {
    const page = await browser.newPage();
    await connectAsDemoUser(page);
    // The second demo card is blocked: every message for it is declined.
    const decided = await stack.graphql<{ authorizeCardMessage: { approved: boolean } }>(
      'mutation ($input: CardMessageInput!) { authorizeCardMessage(input: $input) { approved } }',
      {
        input: {
          messageType: '0100',
          svcCardId: DEMO.cardIds[1],
          amount: 9.5,
          currency: 'USD',
          merchantName: 'Kiosk',
          mcc: '5411',
          stan: '445566',
          rrn: 'RRN000445566',
        },
      },
      { 'x-service-key': PROCESSOR_KEY },
    );
    expect(decided.body.data?.authorizeCardMessage.approved).toBe(false);
    const row = page.locator('#events li.authorization.declined').first();
    await row.waitFor({ timeout: 15_000 });
    expect(await row.textContent()).toContain('declined (62)');
    expect(await page.locator('#chart').getAttribute('data-declined')).toBe('1');
    expect(await page.locator('#chart').getAttribute('data-approved')).toBe('0');
    await page.close();
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
