import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { usersCollection } from '../../subgraphs/user/src/profile/datasource.js';
import { startInbox, type Inbox } from '../support/inbox.js';
import { startTestStack, type TestStack } from '../support/harness.js';

interface Address {
  SvcUserAddressId: string;
  addressLine1: string;
  city: string;
  countryCode: string;
  isMain: boolean;
}
interface UserRecord {
  SvcUserId: string;
  firstName: string;
  email: string;
  mobile: string;
  isEmailConfirmed: boolean;
  isMobilePhoneConfirmed: boolean;
  addresses: Address[];
  languageCode: string;
  homecurrency: string;
  dtsModified: string;
}
interface UserResponse {
  success: boolean;
  user: UserRecord;
  error?: { code: string; message: string; field?: string };
}
interface AlertItem {
  alertTypeId: string;
  category: string | null;
  name: string | null;
  isEnabled: boolean | null;
  parameters: Record<string, unknown> | null;
  descriptionOn?: string;
  descriptionOff?: string;
  dtsModified?: string;
}

const home = { addressLine1: '1 Main Street', city: 'Springfield', state: 'IL', postalCode: '62701' };

describe('the user profile, confirmations and alerts', () => {
  let stack: TestStack;
  let inbox: Inbox;
  let token: string;
  const post = (path: string, body: unknown) => stack.rest<UserResponse>('POST', path, { body, headers: { token } });

  beforeAll(async () => {
    inbox = await startInbox();
    stack = await startTestStack({ SMTP_URL: inbox.smtpUrl, SMS_WEBHOOK_URL: inbox.smsWebhookUrl, GEOCODER_PRELOAD: 'true' });
  });
  beforeEach(async () => {
    token = await stack.loginDemo();
  });
  afterAll(async () => {
    await stack.stop();
    await inbox.close();
  });

  it('changes only the sent fields and answers with the full User record', async () => {
    const response = await post('/user', { firstName: 'Danielle', languageCode: 'en-US', homecurrency: 'EUR', unknownField: 'ignored' });
    expect(response.status).toBe(200);
    expect(response.body.success).toBe(true);
    expect(response.body.user).toMatchObject({
      SvcUserId: 'demo_user_1',
      firstName: 'Danielle',
      languageCode: 'en-US',
      homecurrency: 'EUR',
      email: 'dana.demo@example.com',
    });
    for (const field of [
      'names',
      'name',
      'extras',
      'addresses',
      'isFullyRegistered',
      'dosDob',
      'dobYear',
      'mainSvcAccountId',
      'dtsRegistered',
    ]) {
      expect(response.body.user).toHaveProperty(field);
    }
  });

  it.each([
    ['an email without a domain', { email: 'dana@' }, 'email'],
    ['a mobile with letters', { mobile: '+1 555 CALL' }, 'mobile'],
    ['a lower-case currency', { homecurrency: 'usd' }, 'homecurrency'],
    ['a currency code that is none of ISO 4217', { homecurrency: 'XYZ' }, 'homecurrency'],
    ['a language code that is not one', { languageCode: 'English' }, 'languageCode'],
    ['an address without city', { newAddresses: [{ ...home, city: undefined, countryCode: 'USA' }] }, 'newAddresses[0].city'],
    ['an address without any country', { newAddresses: [home] }, 'newAddresses[0].countryCode'],
    [
      'an alpha-2 code on a checking account address',
      { newAddresses: [{ ...home, countryCode: 'US', accountType: 'checking' }] },
      'newAddresses[0].countryCode',
    ],
    [
      'an alpha-3 code on a debit card address',
      { newAddresses: [{ ...home, countryCode: 'USA', accountType: 'debitCard' }] },
      'newAddresses[0].countryCode',
    ],
    ['a country code that does not exist', { newAddresses: [{ ...home, countryCode: 'XYZ' }] }, 'newAddresses[0].countryCode'],
    ['a numeric country code', { newAddresses: [{ ...home, countryCode: '840', accountType: 'checking' }] }, 'newAddresses[0].countryCode'],
    ['a deletion that matches no address', { deletedAddresses: [{ ...home, countryCode: 'USA' }] }, 'deletedAddresses[0]'],
    ['a wrong type', { isMetric: 'yes' }, 'isMetric'],
  ])('refuses %s with 400 naming the field, and changes nothing', async (_name, body, field) => {
    const before = await usersCollection(stack.mongo.db('user')).findOne({ _id: 'demo_user_1' });
    const response = await post('/user', body);
    expect(response.status).toBe(400);
    expect(response.body.error?.field).toBe(field);
    const after = await usersCollection(stack.mongo.db('user')).findOne({ _id: 'demo_user_1' });
    expect(after).toEqual(before);
  });

  it('adds addresses with the country-code rule of the Address table, converts `country`, keeps one main address and deletes by fields', async () => {
    const added = await post('/user', {
      newAddresses: [
        { ...home, countryCode: 'USA', accountType: 'savings', isMain: true },
        { addressLine1: '10 Rue de Rivoli', city: 'Paris', state: 'IDF', postalCode: '75001', country: 'FRA', accountType: 'debitCard' },
      ],
    });
    expect(added.status).toBe(200);
    const addresses = added.body.user.addresses;
    expect(addresses.map((a) => a.countryCode)).toEqual(['USA', 'USA', 'FR']);
    expect(addresses.filter((a) => a.isMain).map((a) => a.city)).toEqual(['Springfield']);
    const deleted = await post('/user', { deletedAddresses: [{ ...home, country: 'US' }] });
    expect(deleted.status).toBe(200);
    expect(deleted.body.user.addresses.map((a) => a.city)).toEqual(['New York', 'Paris']);
    expect(deleted.body.user.addresses.filter((a) => a.isMain)).toHaveLength(1);
  });

  it('clears the email confirmation on a change, sends a code by email, confirms with it, and answers 404 once confirmed', async () => {
    const changed = await post('/user', { email: 'dana.new@example.com' });
    expect(changed.body.user).toMatchObject({ email: 'dana.new@example.com', isEmailConfirmed: false });
    const code = await inbox.codeFor('dana.new@example.com', 'email');
    const wrong = await stack.rest<UserResponse>('GET', `/confirm/email/demo_user_1/${code === '000000' ? '111111' : '000000'}`, {
      headers: { token },
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toMatchObject({ code: 'CODE_INVALID', field: 'confirmationCodeEmail' });
    const ok = await stack.rest<UserResponse>('GET', `/confirm/email/demo_user_1/${code}`, { headers: { token } });
    expect(ok.status).toBe(200);
    expect(ok.body.user.isEmailConfirmed).toBe(true);
    const again = await stack.rest<UserResponse>('GET', `/confirm/email/demo_user_1/${code}`, { headers: { token } });
    expect(again.status).toBe(404);
  });

  it('sends a mobile confirmation code through the SMS provider and confirms with it', async () => {
    const changed = await post('/user', { mobile: '+12125550199' });
    expect(changed.body.user.isMobilePhoneConfirmed).toBe(false);
    const code = await inbox.codeFor('+12125550199', 'sms');
    const other = await stack.rest<UserResponse>('GET', `/confirm/mobile/someone_else/${code}`, { headers: { token } });
    expect(other.status).toBe(404);
    const ok = await stack.rest<UserResponse>('GET', `/confirm/mobile/demo_user_1/${code}`, { headers: { token } });
    expect(ok.status).toBe(200);
    expect(ok.body.user.isMobilePhoneConfirmed).toBe(true);
  });

  it('counts a burst of guesses atomically: five tries at most, then even the right code is refused', async () => {
    await post('/user', { email: 'burst@example.com' });
    const code = await inbox.codeFor('burst@example.com', 'email');
    const wrong = code === '000000' ? '111111' : '000000';
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => stack.rest('GET', `/confirm/email/demo_user_1/${wrong}`, { headers: { token } })),
    );
    expect(answers.every((a) => a.status === 400)).toBe(true);
    const pending = await stack.mongo.db('user').collection('confirmations').findOne({ SvcUserId: 'demo_user_1', kind: 'email' });
    expect(pending?.attempts).toBe(5);
    const right = await stack.rest('GET', `/confirm/email/demo_user_1/${code}`, { headers: { token } });
    expect(right.status).toBe(400);
  });

  it('sends at most five codes of a kind per hour, refusing the next change with 429 and changing nothing', async () => {
    await stack.mongo.db('user').collection('confirmations').deleteMany({ SvcUserId: 'demo_user_1', kind: 'mobile' });
    for (let i = 0; i < 5; i += 1) expect((await post('/user', { mobile: `+1212555020${i}` })).status).toBe(200);
    const sixth = await post('/user', { mobile: '+12125550299' });
    expect(sixth.status).toBe(429);
    expect(sixth.body.error?.field).toBe('mobile');
    // The oldest of the hour's five codes leaves the window in just under an hour.
    const retryAfter = Number(sixth.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(3500);
    expect(retryAfter).toBeLessThanOrEqual(3600);
    const user = await usersCollection(stack.mongo.db('user')).findOne({ _id: 'demo_user_1' });
    expect(user?.mobile).toBe('+12125550204');
  });

  it('sends a new code when the same unconfirmed email is submitted again', async () => {
    await post('/user', { email: 'again@example.com' });
    await inbox.codeFor('again@example.com', 'email');
    await post('/user', { email: 'again@example.com' });
    const code = await inbox.codeFor('again@example.com', 'email');
    const ok = await stack.rest<UserResponse>('GET', `/confirm/email/demo_user_1/${code}`, { headers: { token } });
    expect(ok.status).toBe(200);
  });

  it('never writes a confirmation code to the logs', () => {
    const text = JSON.stringify(stack.logs);
    expect(text).not.toMatch(/code is \d{6}/);
  });

  it('synchronises alerts: known ids change, unknown ones are ignored, the full list comes back', async () => {
    const response = await stack.rest<{ success: boolean; alerts: AlertItem[] }>('POST', '/alerts', {
      headers: { token },
      body: [
        { alertTypeId: 'alert21', isEnabled: true, parameters: { threshold: 100 } },
        { alertTypeId: 'summaryReportsMonthly', category: 'summaryReports', name: null, isEnabled: true },
        { alertTypeId: 'alert99', isEnabled: true },
      ],
    });
    expect(response.status).toBe(200);
    expect(response.body.success).toBe(true);
    const byId = new Map(response.body.alerts.map((alert) => [alert.alertTypeId, alert]));
    expect([...byId.keys()]).toEqual([
      'alert1',
      'alert2',
      'alert21',
      'alert4',
      'summaryReportsMonthly',
      'summaryReportsQuarterly',
      'summaryReportsAnnually',
    ]);
    expect(byId.get('alert21')).toMatchObject({ isEnabled: true, parameters: { threshold: 100 }, category: 'general' });
    expect(byId.get('alert21')?.dtsModified).toBeDefined();
    expect(byId.get('alert21')?.descriptionOn).toBeDefined();
    expect(byId.get('alert1')?.dtsModified).toBeUndefined();
    expect(byId.get('summaryReportsMonthly')?.descriptionOn).toBeUndefined();
    expect(byId.has('alert99')).toBe(false);
    // Every key the spec's Alert table lists without marking it conditional, null when it has no value.
    for (const alert of response.body.alerts)
      expect(Object.keys(alert)).toEqual(expect.arrayContaining(['alertTypeId', 'category', 'name', 'isEnabled', 'parameters']));
    expect(byId.get('alert1')).toHaveProperty('parameters', null);
  });

  it('refuses an alert without alertTypeId, and a body that is not an array', async () => {
    const missing = await stack.rest<UserResponse>('POST', '/alerts', { headers: { token }, body: [{ isEnabled: true }] });
    expect(missing.status).toBe(400);
    expect(missing.body.error?.field).toBe('[0].alertTypeId');
    const object = await stack.rest<UserResponse>('POST', '/alerts', { headers: { token }, body: { alertTypeId: 'alert1' } });
    expect(object.status).toBe(400);
  });

  it('geocodes an address into candidates with coordinates and the matched parts', async () => {
    const response = await stack.rest<{
      success: boolean;
      candidates: Array<{ latitude: number; longitude: number; matched: { postalCode?: string } }>;
    }>('POST', '/geocode', { headers: { token }, body: { address: '350 Fifth Avenue, New York, NY 10118' } });
    expect(response.status).toBe(200);
    const [best] = response.body.candidates;
    expect(best?.latitude).toBeCloseTo(40.75, 1);
    expect(best?.longitude).toBeCloseTo(-73.99, 1);
    expect(best?.matched.postalCode).toBe('10118');
    const missing = await stack.rest<UserResponse>('POST', '/geocode', { headers: { token }, body: {} });
    expect(missing.status).toBe(400);
    expect(missing.body.error?.field).toBe('address');
  });

  it('gives GraphQL clients the same validation errors as REST', async () => {
    const response = await stack.graphql(
      'mutation ($input: UserUpdateInput!) { updateUser(input: $input) { success } }',
      { input: { email: 'nope' } },
      { token },
    );
    expect(response.body.errors?.[0]?.extensions).toMatchObject({ code: 'VALIDATION_FAILED', field: 'email' });
  });
});
