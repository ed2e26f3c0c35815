/**
 * A message's bodies travel from the parser to the store as the UTF-8 bytes of their JSON
 * (issue 44): the event loop never holds them as strings, and a worker's post hands their memory
 * over instead of copying it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MessageChannel } from 'node:worker_threads';
import { packBodies, transferable, unpackBodies } from '../../../../server/providers/mail/packed-bodies.ts';

const BODIES = {
  bodyText: 'Line "one"\n\tTab, backslash \\ and </script> — é ü 漢字 😀 \u2028 end',
  bodyHtml: '<p title="it\'s">Quoted "HTML" &amp; 😀</p>',
  attachments: [{ filename: 'a "b".pdf', mimeType: 'application/pdf', size: 12 }],
};

describe('packed bodies', () => {
  it('are the UTF-8 bytes of their JSON, and unpack to the same bodies', () => {
    const packed = packBodies(BODIES);
    assert.deepEqual(Buffer.from(packed.json), Buffer.from(JSON.stringify(BODIES), 'utf8'));
    assert.deepEqual(unpackBodies(packed), BODIES);
    assert.deepEqual(unpackBodies(packBodies({ bodyText: '', bodyHtml: '', attachments: [] })), {
      bodyText: '',
      bodyHtml: '',
      attachments: [],
    });
  });

  it('carry nothing but the bodies', () => {
    const extra = { ...BODIES, subject: 'not a body' };
    assert.deepEqual(Object.keys(JSON.parse(Buffer.from(packBodies(extra).json).toString())), [
      'bodyText',
      'bodyHtml',
      'attachments',
    ]);
  });

  it('hand their own memory over with a post; bytes that share a buffer are copied', async () => {
    const packed = packBodies(BODIES);
    const [buffer] = transferable(packed);
    assert.equal(buffer, packed.json.buffer);
    const { port1, port2 } = new MessageChannel();
    const got = new Promise<Uint8Array>((resolve) => port2.once('message', resolve));
    port1.postMessage(packed.json, transferable(packed));
    assert.equal(packed.json.byteLength, 0, 'transferred: the sender no longer holds it');
    assert.deepEqual(unpackBodies({ json: await got }), BODIES);
    port1.close();
    const shared = new Uint8Array(64).subarray(8, 16);
    assert.deepEqual(transferable({ json: shared }), []);
  });
});
