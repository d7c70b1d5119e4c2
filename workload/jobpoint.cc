// blklab-jobpoint: the guest's job point, then its job.
//
//   blklab-jobpoint OUT    reach the job point, then write the job (the
//                          fw_cfg file opt/org.blklab/job) to OUT
//   blklab-jobpoint --origin
//                          the workload starts now: the origin of the
//                          device models' fault schedules (qemu-patches/0052)
//
// The guest init runs it once it has booted as far as it can without its
// job. Writing to the blklab-jobpoint device's port (qemu-patches/0046)
// stops the VM at that instruction; the host either lets it run on at once
// or saves it there and starts every job of this guest from the saved state
// in another QEMU. Either way the guest goes on here, and only then reads
// its job, which each QEMU gives as an fw_cfg file. Both are plain port I/O
// on the vCPU's thread: no host timing reaches the guest.
//
// The fw_cfg file is read through the legacy I/O ports (QEMU's
// docs/specs/fw_cfg.rst): select the directory (key 0x19), find the file
// by name, select it and read its bytes from the data port in one pass.
// Linux's qemu_fw_cfg driver reads a file again from its start for every
// 4 KiB page that sysfs asks for, so a job of N bytes would cost N^2/8192
// port reads there.
//
// The init runs --origin right before it starts the workload of a cell
// whose scenario schedules device faults: the faults' times count from that
// instruction, the same on every host.
//
// Exit status: 0 done; 2 usage, no device or no job file; 3 an I/O error.
#include <sys/io.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr uint16_t kJobPointPort = 0x5f0;
constexpr uint8_t kJobPointReached = 0x01;
constexpr uint8_t kJobPointOrigin = 0x02;
constexpr uint8_t kJobPointSignature = 0xb1;
constexpr uint8_t kJobPointDone = 0xb2;
constexpr uint8_t kJobPointOriginSet = 0xb3;

constexpr uint16_t kFwCfgSelectorPort = 0x510;
constexpr uint16_t kFwCfgDataPort = 0x511;
constexpr uint16_t kFwCfgSignatureKey = 0x00;
constexpr uint16_t kFwCfgFileDirKey = 0x19;
constexpr size_t kFwCfgFileNameBytes = 56;
constexpr char kJobFile[] = "opt/org.blklab/job";

int Fail(int status, const std::string& what) {
  std::fprintf(stderr, "blklab-jobpoint: %s\n", what.c_str());
  return status;
}

void FwCfgSelect(uint16_t key) { outw(key, kFwCfgSelectorPort); }

void FwCfgRead(void* buf, size_t len) { insb(kFwCfgDataPort, buf, len); }

uint32_t BigEndian32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

// The selector key and size of the fw_cfg file `name`; false if absent.
bool FindFwCfgFile(const char* name, uint16_t* key, uint32_t* size) {
  uint8_t count_be[4];
  FwCfgSelect(kFwCfgFileDirKey);
  FwCfgRead(count_be, sizeof count_be);
  const uint32_t count = BigEndian32(count_be);
  for (uint32_t i = 0; i < count; ++i) {
    // struct FWCfgFile: be32 size, be16 select, u16 reserved, char name[56]
    uint8_t entry[8 + kFwCfgFileNameBytes];
    FwCfgRead(entry, sizeof entry);
    const char* entry_name = reinterpret_cast<const char*>(entry + 8);
    if (strncmp(entry_name, name, kFwCfgFileNameBytes) == 0) {
      *size = BigEndian32(entry);
      *key = static_cast<uint16_t>((entry[4] << 8) | entry[5]);
      return true;
    }
  }
  return false;
}

// The workload starts: sets the origin of every device model's faults.
int SetOrigin() {
  if (ioperm(kJobPointPort, 1, 1) != 0) {
    return Fail(2, std::string("ioperm: ") + std::strerror(errno));
  }
  const uint8_t state = inb(kJobPointPort);
  if (state != kJobPointDone && state != kJobPointOriginSet) {
    return Fail(2, state == kJobPointSignature
                       ? "--origin before the job point"
                       : "no blklab-jobpoint device at port 0x5f0 (QEMU without it?)");
  }
  outb(kJobPointOrigin, kJobPointPort);
  if (inb(kJobPointPort) != kJobPointOriginSet) {
    return Fail(2, "QEMU did not take the workload's origin (a QEMU without qemu-patches/0052?)");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--origin") == 0) return SetOrigin();
  // --no-stop: only read the job. For a QEMU without the job point device
  // (stock QEMU in realtime mode, which never saves a guest); the harness
  // says so on the kernel command line.
  const bool stop = !(argc == 3 && std::strcmp(argv[1], "--no-stop") == 0);
  if (argc != (stop ? 2 : 3)) {
    return Fail(2, "usage: blklab-jobpoint [--no-stop] OUT | blklab-jobpoint --origin");
  }
  const char* out_path = argv[argc - 1];
  if ((stop && ioperm(kJobPointPort, 1, 1) != 0) || ioperm(kFwCfgSelectorPort, 2, 1) != 0) {
    return Fail(2, std::string("ioperm: ") + std::strerror(errno));
  }
  if (stop) {
    const uint8_t state = inb(kJobPointPort);
    if (state != kJobPointSignature) {
      return Fail(2, state == kJobPointDone
                         ? "the job point was reached before"
                         : "no blklab-jobpoint device at port 0x5f0 (QEMU without it?)");
    }
    outb(kJobPointReached, kJobPointPort);
    // The VM stopped after that instruction; it goes on from here.
    if (inb(kJobPointPort) != kJobPointDone) {
      return Fail(2, "QEMU did not take the job point (its stderr says why)");
    }
  }

  char signature[4];
  FwCfgSelect(kFwCfgSignatureKey);
  FwCfgRead(signature, sizeof signature);
  if (std::memcmp(signature, "QEMU", 4) != 0) {
    return Fail(2, "no fw_cfg device at port 0x510");
  }
  uint16_t key = 0;
  uint32_t size = 0;
  if (!FindFwCfgFile(kJobFile, &key, &size)) {
    return Fail(2, std::string("no job: QEMU has no fw_cfg file ") + kJobFile);
  }
  std::vector<uint8_t> job(size);
  FwCfgSelect(key);
  FwCfgRead(job.data(), job.size());

  FILE* out = std::fopen(out_path, "wb");
  if (out == nullptr) {
    return Fail(3, std::string(out_path) + ": " + std::strerror(errno));
  }
  const bool written = std::fwrite(job.data(), 1, job.size(), out) == job.size();
  if (std::fclose(out) != 0 || !written) {
    return Fail(3, std::string(out_path) + ": write failed");
  }
  return 0;
}
