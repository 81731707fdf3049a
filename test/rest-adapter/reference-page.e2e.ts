import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO } from '../../platform/domain/demo.js';
import { launchChromium } from '../support/browser.js';
import { contractChecker } from '../support/contract.js';
import { startTestStack, type TestStack } from '../support/harness.js';

/** What the check reads of a rendered element (the tests compile without the DOM library). */
interface RenderedElement {
  textContent: string | null;
  querySelector(selector: string): RenderedElement | null;
  getAttribute(name: string): string | null;
}

describe('the API reference page in a real browser', () => {
  let stack: TestStack;
  let browser: Browser;

  beforeAll(async () => {
    stack = await startTestStack();
    browser = await launchChromium();
  }, 240_000);
  afterAll(async () => {
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- beforeAll may have failed before assigning it.
    await browser?.close();
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- beforeAll may have failed before assigning it.
    await stack?.stop();
  });

  it("renders every route of the document from the adapter's own files, with the demo data's examples", async () => {
    const page = await browser.newPage();
    const origin = new URL(stack.restAdapter.url).origin;
    const elsewhere: string[] = [];
    const problems: string[] = [];
    page.on('request', (request) => {
      if (!request.url().startsWith(origin) && !request.url().startsWith('data:')) elsewhere.push(request.url());
    });
    page.on('pageerror', (error) => problems.push(error.message));
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text());
    });

    const response = await page.goto(`${stack.restAdapter.url}/docs`);
    expect(response?.status()).toBe(200);
    expect(response?.headers()['content-security-policy']).toContain("script-src 'self'");

    const { document } = contractChecker();
    const documented = Object.entries(document.paths).flatMap(([path, item]) =>
      Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`),
    );
    const operations = page.locator('.opblock');
    await expect.poll(() => operations.count(), { timeout: 20_000 }).toBe(documented.length);
    const rendered = await operations.evaluateAll((blocks: RenderedElement[]) =>
      blocks.map(
        (block) =>
          `${block.querySelector('.opblock-summary-method')?.textContent?.trim() ?? ''} ${block.querySelector('[data-path]')?.getAttribute('data-path') ?? ''}`,
      ),
    );
    expect(rendered.sort()).toEqual(documented.sort());

    // One operation opened: its description marks what the project designed, its example is the demo login.
    const login = page.locator('.opblock-put', { has: page.locator('[data-path="/token"]') });
    await login.locator('.opblock-summary').click();
    await login.locator('.opblock-body').waitFor();
    await expect.poll(() => login.locator('.opblock-body').innerText()).toContain(DEMO.userName);
    const logout = page.locator('.opblock-delete', { has: page.locator('[data-path="/token"]') });
    await logout.locator('.opblock-summary').click();
    await expect.poll(() => logout.locator('.opblock-body').innerText()).toContain('Designed');

    expect(elsewhere).toEqual([]);
    expect(problems).toEqual([]);
    await page.close();
  });
});
