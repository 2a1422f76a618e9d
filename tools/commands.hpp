// Subcommands of the `tq` tool.
#pragma once

namespace tq::cli {

// `tq demo`: compresses random vectors with every compiled variant and prints
// bytes, compression ratio, round-trip MSE against theory, and kernel speed.
int demo(int argc, char** argv);

}  // namespace tq::cli
