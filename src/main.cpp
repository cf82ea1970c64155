// Placeholder; replaced by the CLI.
int main() { return 3; }
