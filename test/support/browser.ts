import { chromium, type Browser } from 'playwright-core';
import { ensureDebianPackage } from './debian.js';

const CHROMIUM = '/usr/bin/chromium';

/** Headless Debian Chromium for the browser tests (installed first when missing). */
export async function launchChromium(): Promise<Browser> {
  await ensureDebianPackage(CHROMIUM, 'chromium');
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
    ],
  });
}
