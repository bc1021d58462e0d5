// The subcommands of the gpu-tenancy binary. Each takes its arguments after the subcommand name
// and returns the process exit code: 0 success, 1 a negative answer (denials), 2 bad usage or
// input.
#ifndef GPU_TENANCY_CMD_COMMANDS_H_
#define GPU_TENANCY_CMD_COMMANDS_H_

#include <string>
#include <vector>

namespace cmd {

int RunAudit(const std::vector<std::string>& args);
int RunCheck(const std::vector<std::string>& args);
int RunExplain(const std::vector<std::string>& args);
int RunNodeAgent(const std::vector<std::string>& args);
int RunPlan(const std::vector<std::string>& args);
int RunReconfigure(const std::vector<std::string>& args);
int RunSchedulerConfig(const std::vector<std::string>& args);
int RunServe(const std::vector<std::string>& args);
int RunUi(const std::vector<std::string>& args);
int RunWebhookConfig(const std::vector<std::string>& args);

}  // namespace cmd

#endif  // GPU_TENANCY_CMD_COMMANDS_H_
