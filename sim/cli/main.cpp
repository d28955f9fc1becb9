// clustersim command-line entry point (subcommands: run, catalog).
int main() { return 0; }
