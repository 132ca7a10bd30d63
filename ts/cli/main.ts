import { Builtins, Cli } from 'clipanion';

import { CompactCommand } from './commands/compact.js';
import { DiffCommand } from './commands/diff.js';
import { DoctorCommand } from './commands/doctor.js';
import { EventsCommand } from './commands/events.js';
import { ImportJsonlCommand, ImportTensorboardCommand, ImportTrlCommand, ImportVerlCommand } from './commands/import.js';
import { InfoCommand } from './commands/info.js';
import { McpCommand } from './commands/mcp.js';
import { ServeCommand } from './commands/serve.js';
import { ReportCommand } from './commands/report.js';
import { SampleCommand } from './commands/sample.js';
import { SamplesCommand } from './commands/samples.js';
import { ScaleBenchCommand } from './commands/scale-bench.js';
import { SpanListCommand } from './commands/span-list.js';
import { SqlCommand } from './commands/sql.js';
import { TrialCaptureCommand } from './commands/trial-capture.js';
import { TrialDeliverCommand } from './commands/trial-deliver.js';
import { TrialExpandCommand } from './commands/trial-expand.js';
import { TrialListCommand } from './commands/trial-list.js';
import { TrialShowCommand } from './commands/trial-show.js';
import { TrialStageCommand } from './commands/trial-stage.js';
import { TrialStatusCommand } from './commands/trial-status.js';
import { WatchCommand } from './commands/watch.js';
import { COMMAND_GROUPS, groupCommand } from './command-groups.js';
import { ProbeCli } from './probe-cli.js';
import { VERSION } from '../version.js';

/**
 * Every command, registered. A command's module holds only what registration and help read
 * (paths, usage, options and their validators); its exec() imports the code that does the
 * work (<command>-exec.ts) when it runs. So `probe --version`, `--help` and each command
 * load no other command's code, nor the native addon until one needs it
 * (test/cli-startup.test.ts; start-up time: probe scale-bench).
 */
export function buildCli(): ProbeCli {
  const cli = new ProbeCli({ binaryName: 'probe', binaryLabel: 'rlprobe', binaryVersion: VERSION });
  cli.register(Builtins.HelpCommand);
  cli.register(Builtins.VersionCommand);
  for (const group of COMMAND_GROUPS) cli.register(groupCommand(group));
  cli.register(InfoCommand);
  cli.register(EventsCommand);
  cli.register(SamplesCommand);
  cli.register(SampleCommand);
  cli.register(SpanListCommand);
  cli.register(SqlCommand);
  cli.register(TrialCaptureCommand);
  cli.register(TrialStageCommand);
  cli.register(TrialDeliverCommand);
  cli.register(TrialStatusCommand);
  cli.register(TrialListCommand);
  cli.register(TrialShowCommand);
  cli.register(TrialExpandCommand);
  cli.register(CompactCommand);
  cli.register(DoctorCommand);
  cli.register(WatchCommand);
  cli.register(DiffCommand);
  cli.register(ReportCommand);
  cli.register(ImportTrlCommand);
  cli.register(ImportVerlCommand);
  cli.register(ImportJsonlCommand);
  cli.register(ImportTensorboardCommand);
  cli.register(ScaleBenchCommand);
  cli.register(McpCommand);
  cli.register(ServeCommand);
  return cli;
}

/** Runs the CLI and resolves to its exit code. */
export async function main(argv: string[]): Promise<number> {
  return buildCli().run(argv, Cli.defaultContext);
}
