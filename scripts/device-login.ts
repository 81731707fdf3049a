// `npm run device-login -- <channel> <deviceTag> <serverSecret> [uuid]`: prints a PUT /token body
// with a fresh proof for a device channel (android, android_v1, ios_v1, mobile), to try them by hand.
import { androidSignature, deviceCryptotext } from '../subgraphs/user/src/auth/device-proof.js';

const [channel, deviceTag, secret, uuid] = process.argv.slice(2);
if (!channel || !deviceTag || !secret) {
  console.error('usage: npm run device-login -- <android|android_v1|ios_v1|mobile> <deviceTag> <serverSecret> [uuid for android]');
  process.exit(2);
}
const now = Date.now();
if (channel === 'android') {
  if (!uuid) throw new Error('android needs the device uuid');
  console.log(
    JSON.stringify({ channel, uuid, deviceTagOpen: deviceTag, signature: androidSignature(secret, uuid, deviceTag, now), specifics: {} }),
  );
} else {
  const dtsValueString = new Date(now).toISOString();
  console.log(
    JSON.stringify({ channel, deviceTag, dtsValueString, cryptotext: deviceCryptotext(secret, channel, deviceTag, dtsValueString) }),
  );
}
