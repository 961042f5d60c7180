// The fast what-if engine's module. Its requirements are those of the Kueue release it is built
// against, so they live in that release's prepared module, not here: every go command runs with
// -modfile=.toolchain/whatif/<release>/go.mod (README.md; toolchain/build.sh whatif_kueue).
module gpu-queues.local/toolchain/whatif

go 1.26.0
