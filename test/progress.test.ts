/** Progress output of long commands: a redrawn bar on a TTY, plain lines otherwise. */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, test } from 'node:test';

import { Progress } from '../ts/cli/progress.js';

function sink(isTTY: boolean): Writable & { isTTY: boolean; columns: number; text: string } {
  const w = new Writable({
    write(chunk, _enc, cb) {
      w.text += String(chunk);
      cb();
    },
  }) as Writable & { isTTY: boolean; columns: number; text: string };
  w.isTTY = isTTY;
  w.columns = 80;
  w.text = '';
  return w;
}

describe('Progress', () => {
  test('plain lines when the stream is not a terminal (logs, CI, pipes)', () => {
    const out = sink(false);
    const p = new Progress(out, 'compacting');
    p.update(1, 4, 'steps');
    p.update(2, 4, 'samples');
    p.done();
    assert.equal(out.text, 'compacting 1/4 steps\ncompacting 2/4 samples\n');
    assert.ok(!out.text.includes('\r'));
  });

  test('one redrawn bar on a terminal, ended by a newline', () => {
    const out = sink(true);
    const p = new Progress(out, 'compacting');
    p.update(1, 4, 'steps');
    p.update(4, 4, 'rank-001 samples');
    p.done();
    const frames = out.text.split('\r').filter(Boolean);
    assert.equal(frames.length, 2);
    // oxlint-disable-next-line no-control-regex -- the test is about the ESC[K the bar writes
    assert.match(frames[0], /^compacting \[######------------------\] 1\/4 steps\x1b\[K$/);
    // oxlint-disable-next-line no-control-regex -- as above
    assert.match(frames[1], /^compacting \[########################\] 4\/4 rank-001 samples\x1b\[K\n$/);
    assert.ok(frames.every((f) => f.replace('\x1b[K', '').trimEnd().length <= 79), 'never wider than the terminal');
  });

  test('a pseudo-terminal reporting 0 columns still gets the whole line', () => {
    const out = sink(true);
    out.columns = 0;
    new Progress(out, 'report').update(5, 5, 'done');
    assert.equal(out.text, '\rreport [########################] 5/5 done\x1b[K');
  });

  test('a terminal that never saw a bar gets no stray newline', () => {
    const out = sink(true);
    new Progress(out, 'x').done();
    assert.equal(out.text, '');
  });
});
