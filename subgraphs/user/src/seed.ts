import type { Db } from 'mongodb';
import { DEMO } from '../../../platform/domain/demo.js';
import { insertIfAbsent } from '../../../platform/mongo/mongo.js';
import { hashPassword, sha256 } from '../../../platform/security/secrets.js';
import { AggregatorProvisioning } from './auth/provisioning.js';
import { authCollections } from './auth/datasource.js';
import { usersCollection, type UserDocument } from './profile/datasource.js';

/** Seeds the demo end user, their internet login and test device, and the demo aggregator and its user. Idempotent: existing records are kept. */
export async function seedUser(db: Db, now = new Date()): Promise<void> {
  const users = usersCollection(db);
  const auth = authCollections(db);
  const { credentials, devices, chatLinks } = auth;
  await seedFriend(db, now);
  const user: UserDocument = {
    _id: DEMO.userId,
    SvcUserId: DEMO.userId,
    names: ['Dana', 'Q', 'Demo'],
    firstName: 'Dana',
    middleName: 'Q',
    lastName: 'Demo',
    sortId: 'demo dana',
    languageCode: 'en',
    segment: 'retail',
    referralCode: 'DANA2026',
    extras: { sex: 'F', eyeColor: 'green', hairColor: 'brown', heightMetric: 168, weightMetric: 61 },
    private: false,
    isFullyRegistered: true,
    isIdleUser: false,
    isActive: true,
    isMetric: true,
    isEmailConfirmed: true,
    isMobilePhoneConfirmed: true,
    uiStage: 'home',
    dosDob: '1990-04-17',
    addresses: [
      {
        _id: 'demo_address_1',
        SvcUserAddressId: 'demo_address_1',
        SvcUserId: DEMO.userId,
        addressLine1: '350 Fifth Avenue',
        addressLine2: 'Suite 4200',
        city: 'New York',
        state: 'NY',
        postalCode: '10118',
        countryCode: 'USA',
        isMain: true,
        dtsRecorded: now,
        dtsModified: now,
      },
    ],
    mobile: '+12125550100',
    phoneNumber: '+12125550101',
    email: 'dana.demo@example.com',
    homecurrency: 'USD',
    postOnboardingStepsRequired: null,
    faceImage: null,
    mainSvcAccountId: DEMO.accountId,
    phoneNumbers: [],
    emails: [],
    clientDtsModified: null,
    isHardened: false,
    dtsCreated: now,
    dtsCreatedAtUsers: now,
    dtsModified: now,
    dtsRegistered: now,
  };
  await users.updateOne({ _id: user._id }, { $setOnInsert: user }, { upsert: true });
  if (!(await credentials.findOne({ _id: DEMO.userName }))) {
    await credentials.updateOne(
      { _id: DEMO.userName },
      {
        $setOnInsert: {
          userName: DEMO.userName,
          SvcUserId: DEMO.userId,
          passwordHash: await hashPassword(DEMO.password),
          dtsCreated: now,
          dtsPasswordChanged: now,
        },
      },
      { upsert: true },
    );
  }
  const device = {
    SvcUserId: DEMO.userId,
    serverSecret: DEMO.deviceSecret,
    uuid: null,
    deviceIdHash: null,
    lastProofAt: null,
    ipAddress: null,
    dtsRegistered: now,
  };
  const demoDevices = [
    { ...device, _id: DEMO.testDeviceTag, channels: ['test'], serverSecret: null, deviceData: { model: 'demo' } },
    {
      ...device,
      _id: DEMO.devices.android.deviceTag,
      channels: ['android'],
      uuid: DEMO.devices.android.uuid,
      deviceData: { model: 'Pixel demo' },
    },
    { ...device, _id: DEMO.devices.android_v1.deviceTag, channels: ['android_v1'], deviceData: { model: 'Galaxy demo' } },
    { ...device, _id: DEMO.devices.ios_v1.deviceTag, channels: ['ios_v1'], deviceData: { model: 'iPhone demo' } },
    { ...device, _id: DEMO.devices.mobile.deviceTag, channels: ['mobile'], deviceData: { model: 'Phone demo' } },
    {
      ...device,
      _id: DEMO.devices.browser.deviceTag,
      channels: ['browser'],
      deviceIdHash: sha256(DEMO.devices.browser.deviceId),
      deviceData: { browser: 'demo' },
    },
  ];
  for (const demoDevice of demoDevices) await devices.updateOne({ _id: demoDevice._id }, { $setOnInsert: demoDevice }, { upsert: true });
  await chatLinks.updateOne(
    { _id: `${DEMO.chat.transport}:${DEMO.chat.transportUserId}` },
    { $setOnInsert: { SvcUserId: DEMO.userId, dtsLinked: now } },
    { upsert: true },
  );
  const provisioning = new AggregatorProvisioning(auth, null);
  await provisioning.createAggregator(DEMO.aggregatorId, 'Demo aggregator');
  await provisioning.createAggregatorUser(DEMO.aggregatorId, DEMO.aggregatorLogin, DEMO.aggregatorPassword);
}

/** The second demo user (no login): the other party of the demo user's IOU. */
async function seedFriend(db: Db, now: Date): Promise<void> {
  const friend: UserDocument = {
    _id: DEMO.friendUserId,
    SvcUserId: DEMO.friendUserId,
    names: ['Sam', 'Lender'],
    firstName: 'Sam',
    middleName: null,
    lastName: 'Lender',
    sortId: 'lender sam',
    languageCode: 'en',
    segment: 'retail',
    referralCode: 'SAM2026',
    extras: {},
    private: false,
    isFullyRegistered: true,
    isIdleUser: false,
    isActive: true,
    isMetric: false,
    isEmailConfirmed: false,
    isMobilePhoneConfirmed: false,
    uiStage: 'home',
    dosDob: null,
    addresses: [],
    mobile: null,
    phoneNumber: null,
    email: null,
    homecurrency: 'USD',
    postOnboardingStepsRequired: null,
    faceImage: null,
    mainSvcAccountId: null,
    phoneNumbers: [],
    emails: [],
    clientDtsModified: null,
    isHardened: false,
    dtsCreated: now,
    dtsCreatedAtUsers: now,
    dtsModified: now,
    dtsRegistered: now,
  };
  await insertIfAbsent(usersCollection(db), friend);
}
