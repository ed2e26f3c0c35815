/**
 * Which driver errors are an outage (SERVICE_UNAVAILABLE, with Retry-After) and which are a
 * fault of the data sent (INTERNAL_ERROR): classified by SQLSTATE, never by message text.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DriverException } from '@mikro-orm/core';
import { isDatabaseUnavailable } from '../../../server/domain/db-errors.ts';
import { toAppError } from '../../../server/errors/classify.ts';

const pgError = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('isDatabaseUnavailable', () => {
  it('takes connection exceptions, shutdowns, too many connections and timeouts for an outage', () => {
    for (const code of ['08006', '08001', '57P01', '57P03', '53300', '57014', 'ECONNREFUSED']) {
      assert.equal(isDatabaseUnavailable(pgError(code)), true, code);
      assert.equal(toAppError(new DriverException(pgError(code))).code, 'SERVICE_UNAVAILABLE', code);
    }
  });

  it('never takes a data error, or the protocol violation a U+0000 parameter gets, for an outage', () => {
    for (const code of ['22P05', '22021', '22001', '22P02', '08P01', '23505', '42601']) {
      const err = new DriverException(pgError(code, 'Connection terminated is not what this is'));
      assert.equal(isDatabaseUnavailable(err), false, code);
      assert.equal(isDatabaseUnavailable(Object.assign(new Error('wrapped'), { cause: err })), false, code);
      assert.equal(toAppError(err).code, 'INTERNAL_ERROR', code);
    }
  });
});
