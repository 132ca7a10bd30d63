// The same run read from CommonJS: `require('rlprobe')` of the ESM package (Node >= 20.19).
const { RunReader } = require('rlprobe');

const run = RunReader.open(process.argv[2]);
const loss = run.view().series('loss');
console.log(JSON.stringify({ steps: loss.length, firstLoss: loss[0] }));
