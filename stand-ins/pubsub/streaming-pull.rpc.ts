/**
 * The StreamingPull RPC of the Pub/Sub stand-in: binding a stream to its subscription, acks and
 * deadline changes sent on the stream, keep-alive heartbeats, and ending the stream.
 */
import * as grpc from '@grpc/grpc-js';
import { DEFAULT_ACK_DEADLINE_S, RpcError, type Broker, type Req, type StreamState } from './broker.model.ts';
import { endStream, finishStream, getSub, takeFault } from './broker.ops.ts';
import { acknowledge, checkDeadline, dispatch, modifyAckDeadline, streamWritable } from './lease.dispatch.ts';

function onStreamRequest(b: Broker, st: StreamState, req: Req) {
  const ackIds: string[] = req.ackIds ?? [];
  const modIds: string[] = req.modifyDeadlineAckIds ?? [];
  const modSecs: number[] = req.modifyDeadlineSeconds ?? [];
  const streamDeadline = Number(req.streamAckDeadlineSeconds ?? 0);

  if (!st.sub) {
    const name = String(req.subscription ?? '');
    if (!name)
      throw new RpcError(grpc.status.INVALID_ARGUMENT, 'The first StreamingPull request must name the subscription');
    const sub = getSub(b, name);
    checkDeadline(streamDeadline, 'stream_ack_deadline_seconds');
    st.sub = sub;
    st.deadlineS = streamDeadline || sub.resource.ackDeadlineSeconds;
    st.maxOutstanding = Math.max(0, Number(req.maxOutstandingMessages ?? 0));
    sub.streams.add(st);
  } else {
    if (req.subscription && req.subscription !== st.sub.name) {
      throw new RpcError(grpc.status.INVALID_ARGUMENT, 'Subscription may only be set on the first request of a stream');
    }
    if (streamDeadline) {
      checkDeadline(streamDeadline, 'stream_ack_deadline_seconds');
      st.deadlineS = streamDeadline;
    }
    if (ackIds.length === 0 && modIds.length === 0 && !streamDeadline) {
      // Client keep-alive ping: answer with a heartbeat.
      if (streamWritable(b, st)) st.call.write({});
      return;
    }
  }
  const sub = st.sub;
  if (modIds.length !== modSecs.length) {
    throw new RpcError(
      grpc.status.INVALID_ARGUMENT,
      'modify_deadline_seconds and modify_deadline_ack_ids must have the same length',
    );
  }
  modSecs.forEach((s) => checkDeadline(Number(s), 'modify_deadline_seconds'));
  if (ackIds.length) acknowledge(sub, ackIds);
  modIds.forEach((id, i) => modifyAckDeadline(sub, [id], Number(modSecs[i])));
  dispatch(b, sub);
}

export function streamingPull(b: Broker, call: grpc.ServerDuplexStream<Req, Record<string, unknown>>) {
  b.calls.StreamingPull = (b.calls.StreamingPull ?? 0) + 1;
  const st: StreamState = {
    call,
    deadlineS: DEFAULT_ACK_DEADLINE_S,
    maxOutstanding: 0,
    outstanding: new Set(),
    closed: false,
  };
  const fault = takeFault(b, 'StreamingPull');
  if (fault) {
    call.on('error', () => undefined);
    call.emit('error', fault);
    return;
  }
  b.allStreams.add(st);
  call.on('data', (req: Req) => {
    if (st.closed) return;
    try {
      onStreamRequest(b, st, req);
    } catch (err) {
      endStream(b, st, err instanceof RpcError ? err : new RpcError(grpc.status.INTERNAL, String(err)));
    }
  });
  call.on('end', () => endStream(b, st)); // client half-closed: finish with OK
  call.on('cancelled', () => finishStream(b, st));
  call.on('error', () => finishStream(b, st));
  call.on('close', () => finishStream(b, st));
}
