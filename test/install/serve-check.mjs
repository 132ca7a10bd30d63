// Run in a project that installed rlprobe: starts `probe serve` from the installed package,
// fetches the page, its assets and the run list, stops it with SIGINT, and prints what it saw
// as JSON (the assets ship inside the package: a missing one is a 404 here).
import { spawn } from 'node:child_process';
import path from 'node:path';

const root = process.argv[2];
const bin = path.join('node_modules', 'rlprobe', 'dist', 'cli', 'bin.js');
const child = spawn(process.execPath, [bin, 'serve', root, '--port', '0'], { stdio: ['ignore', 'ignore', 'pipe'] });
let stderr = '';
const url = await new Promise((resolve, reject) => {
  const timer = setTimeout(() => reject(new Error(`probe serve did not start: ${stderr}`)), 60_000);
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (t) => {
    stderr += t;
    const m = /at (http:\/\/\S+\/)\n/.exec(stderr);
    if (m) {
      clearTimeout(timer);
      resolve(m[1]);
    }
  });
  child.on('exit', (code) => reject(new Error(`probe serve exited with ${code}: ${stderr}`)));
});
const status = {};
for (const p of ['', 'assets/app.js', 'assets/charts.js', 'assets/uplot.js', 'assets/uplot.css', 'assets/app.css']) status[`/${p}`] = (await fetch(url + p)).status;
const runs = (await (await fetch(`${url}api/runs`)).json()).runs.map((r) => ({ id: r.id, rows: r.rows }));
const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
child.kill('SIGINT');
console.log(JSON.stringify({ status, runs, exit: await exited }));
