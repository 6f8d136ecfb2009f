/* The nib command-line tool: one file per subcommand, dispatched from main.c. */
#ifndef NIB_CLI_H
#define NIB_CLI_H

int cmd_inspect(int argc, char **argv);

#endif
