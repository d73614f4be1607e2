// SPDX-License-Identifier: GPL-3.0-or-later
// The train.py that `nnstudio-cli export` writes beside model.py (pytorch_code.cpp fills the
// {{PLACEHOLDERS}} with the project's settings). Kept as one Python file here so that it reads
// as what it writes.
#include "engine/export/train_template.h"

namespace nns::exporting {

const char* const kTrainTemplate =
    R"PY("""Trains {{CLASS}} as NN Studio trains it: the project's loss, optimizer, scheduler, batch
size, epochs, seed and gradient clipping, on {{DATA_DOC}}.

    python3 train.py                        # one process
    torchrun --nproc_per_node 2 train.py    # DistributedDataParallel: gloo on CPU, nccl on GPU

--steps N stops after N steps, --epochs N runs N epochs, --weights FILE.pt starts from a
state dict, --save CKPT.pt writes a checkpoint in NN Studio's layout (`nnstudio-cli train
--resume CKPT.pt` and the window's Load Checkpoint continue from it), --device cpu|cuda|cuda:N,
{{DATA_OPTION}}.
The run is recorded into the run store --runs DIR (default runs/ beside train.py) by
nnstudio_runs.py: its curves, the project's probes and snapshots, for `nnstudio-cli runs DIR`;
--no-record turns that off.
Under DDP each of the N processes takes BATCH_SIZE / N samples of every batch, so a step sees
the batch one process would.
"""
{{IMPORTS}}
import nnstudio_runs
from model import {{CLASS}}

HERE = os.path.dirname(os.path.abspath(__file__))
BATCH_SIZE = {{BATCH}}
EPOCHS = {{EPOCHS}}
SEED = {{SEED}}
CLIP_GRAD_NORM = {{CLIP}}  # 0: off
CLASSIFICATION = {{CLASSIFICATION}}  # the targets are class indices (else real values)
SCHEDULER_PER_STEP = {{PER_STEP}}  # OneCycleLR steps after every batch, the others per epoch
PROBES = {{PROBES}}  # the modules the project's probes watch
PROBE_EVERY = {{PROBE_EVERY}}  # a probe sample every this many steps
{{DATA_SETTINGS}}

def make_loss():
    return {{LOSS}}


def make_optimizer(parameters):
    return {{OPTIMIZER}}


def make_scheduler(optimizer, epochs, steps_per_epoch):
    return {{SCHEDULER}}


def parse_args():
    parser = argparse.ArgumentParser(description="Train {{CLASS}}, exported from NN Studio.")
    parser.add_argument("--steps", type=int, default=0,
                        help="stop after this many steps (default: run the epochs)")
    parser.add_argument("--epochs", type=int, default=EPOCHS, help=f"default {EPOCHS}")
    parser.add_argument("--weights", help="start from this state dict (.pt)")
    parser.add_argument("--save", help="write a checkpoint here at the end (.pt)")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    parser.add_argument("--data", default={{DATA_DEFAULT}},
                        help={{DATA_HELP}})
    parser.add_argument("--runs", default=os.path.join(HERE, "runs"),
                        help="record the run into this run store (default runs/ beside train.py)")
    parser.add_argument("--no-record", action="store_true", help="do not record the run")
    return parser.parse_args()


def loss_inputs(out, y):
    """A class per position (targets [N, T]) is scored over the N * T positions."""
    if CLASSIFICATION and y.dim() == 2:
        return out.reshape(-1, out.shape[-1]), y.reshape(-1)
    return out, y


def count_correct(out, y):
    """The right predictions and the predictions that count (a target of -100 does not)."""
    if not CLASSIFICATION:
        return 0, len(y)
    scores, labels = loss_inputs(out, y)
    counts = labels != -100
    return ((scores.argmax(dim=1) == labels) & counts).sum().item(), counts.sum().item()


def evaluate(model, loss_fn, x, y):
    """The loss and accuracy (None for regression) on (x, y) in eval mode, as NN Studio's test
    figures."""
    model.eval()
    with torch.no_grad():
        out = model(x)
        loss = loss_fn(*loss_inputs(out, y)).item()
        correct, counted = count_correct(out, y)
    model.train()
    return loss, (correct / max(counted, 1) if CLASSIFICATION else None)


def describe(loss, accuracy):
    text = f"loss {loss:.4f}"
    return text + (f" accuracy {100 * accuracy:.1f}%" if CLASSIFICATION else "")


def describe_test(figures):
    return describe(figures[0], figures[1] or 0)


{{DATA_CODE}}

def main():
    args = parse_args()
    # torchrun (or any launcher) sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT.
    distributed = "RANK" in os.environ and "WORLD_SIZE" in os.environ
    device = torch.device(args.device)
    rank, world_size = 0, 1
    if distributed:
        backend = "nccl" if device.type == "cuda" else "gloo"
        if device.type == "cuda":
            device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
            torch.cuda.set_device(device)
        dist.init_process_group(backend)
        rank, world_size = dist.get_rank(), dist.get_world_size()
        if rank == 0:
            print(f"DDP: {world_size} processes, {backend}, {device.type}", flush=True)

    torch.manual_seed(SEED)
    model = {{CLASS}}().to(device)
    if args.weights:
        model.load_state_dict(torch.load(args.weights, map_location=device), strict=True)
    train_set, x_test, y_test = load_data(args.data, device)
    sampler = DistributedSampler(train_set, shuffle=True, seed=SEED) if distributed else None
    loader = DataLoader(train_set, batch_size=max(BATCH_SIZE // world_size, 1),
                        shuffle=sampler is None, sampler=sampler,
                        generator=torch.Generator().manual_seed(SEED))
    trained = DistributedDataParallel(model) if distributed else model
    loss_fn = make_loss()
    optimizer = make_optimizer(model.parameters())
    scheduler = make_scheduler(optimizer, args.epochs, len(loader))
    # Every process records (the step metrics are averaged over them); rank 0 writes.
    recorder = None if args.no_record else nnstudio_runs.Recorder(
        args.runs, trained, probes=PROBES, every=PROBE_EVERY)

    # An epoch's train figures are its batches' running means, as NN Studio reports them.
    step, epoch, done = 0, 0, False
    started = time.perf_counter()
    while not done and (args.steps or epoch < args.epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        totals = torch.zeros(4, dtype=torch.float64)  # loss * samples, correct, counted, samples
        for x, y in loader:
            x, y = x.to(device), y.to(device)  # a no-op for data already there
            out = trained(x)
            loss = loss_fn(*loss_inputs(out, y))
            optimizer.zero_grad()
            loss.backward()
            if CLIP_GRAD_NORM > 0:
                nn.utils.clip_grad_norm_(model.parameters(), CLIP_GRAD_NORM)
            optimizer.step()
            if scheduler is not None and SCHEDULER_PER_STEP:
                scheduler.step()
            step += 1
            correct, counted = count_correct(out.detach(), y)
            totals += torch.tensor([loss.item() * len(y), correct, counted, len(y)],
                                   dtype=torch.float64)
            if recorder is not None:
                recorder.step(loss=loss.item(),
                              accuracy=correct / max(counted, 1) if CLASSIFICATION else None,
                              lr=optimizer.param_groups[0]["lr"])
                recorder.snapshot(optimizer)
            if args.steps and step >= args.steps:
                done = True
                break
        else:
            epoch += 1
            if scheduler is not None and not SCHEDULER_PER_STEP:
                scheduler.step()
            if distributed:
                dist.all_reduce(totals)  # every process's share of the epoch
            test = evaluate(model, loss_fn, x_test, y_test) if rank == 0 else (None, None)
            if recorder is not None:
                recorder.epoch(test_loss=test[0], test_accuracy=test[1])
            if rank == 0:
                total = f"/{args.epochs}" if not args.steps else ""
                train = describe(totals[0].item() / totals[3].item(),
                                 totals[1].item() / max(totals[2].item(), 1))
                print(f"epoch {epoch:3d}{total}  train {train}"
                      f"  test {describe_test(test)}", flush=True)

    if recorder is not None:
        recorder.close(optimizer)
    if rank == 0:
        print(f"test: {describe_test(evaluate(model, loss_fn, x_test, y_test))}")
        seconds = time.perf_counter() - started
        print(f"{step} steps in {seconds:.3f} s ({1000 * seconds / max(step, 1):.3f} ms a step)")
        if recorder is not None:
            print(f"recorded run {recorder.run} in {args.runs} (probes: {recorder.sampled} "
                  f"sampled steps, {100 * recorder.overhead():.1f}% of the training time)")
        if args.save:
            torch.save({"model_state_dict": model.state_dict(),
                        "optimizer_state_dict": optimizer.state_dict(),
                        "epoch": epoch, "step": step}, args.save)
            print(f"saved {args.save}")
    if distributed:
        # Every process waits here for the others first: a collective's tensors are let go by
        # gloo's worker thread after the caller has resumed, and torch 1.13 deadlocks when the
        # main thread destroys the process group (at exit, holding the GIL) while that worker
        # still needs the GIL to free one. The barrier's wait releases the GIL and lets it.
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
)PY";

const char* const kDataPtLoader =
    R"PY(def load_data(path, device):
    """The train set, and the test set's inputs and targets: data.pt's tensors, the project's data
    in NN Studio's exact train/test split."""
    data = torch.load(path, map_location=device)
    return TensorDataset(data["x_train"], data["y_train"]), data["x_test"], data["y_test"]
)PY";

const char* const kFilesLoader =
    R"PY(def stack(dataset, like):
    """All of `dataset` as one tensor of inputs and one of targets, in order; empty ones shaped as
    `like`'s samples when it has none (a test fraction of 0)."""
    batches = list(DataLoader(dataset if len(dataset) else Subset(like, [0]), batch_size=256))
    x, y = (torch.cat(parts) for parts in zip(*batches))
    return (x, y) if len(dataset) else (x[:0], y[:0])


def load_data(data, device):
    """The train set, and the test set's inputs and targets: the samples of the source at `data`
    that NN Studio trains and tests on (data.pt's train_indices and test_indices, its exact
    split). The train set goes through TRAIN_TRANSFORM as the DataLoader draws it, its random
    transforms anew every epoch; the test set through TEST_TRANSFORM, once (test sets are small)."""
    split = torch.load(os.path.join(HERE, "data.pt"))
    train_set = Subset(source_dataset(data, True, TRAIN_TRANSFORM), split["train_indices"].tolist())
    # Without a test split of its own, the test samples are others of the train split, read
    # again through the test transforms.
    test_set = Subset(source_dataset(data, not OWN_TEST_SPLIT, TEST_TRANSFORM),
                      split["test_indices"].tolist())
    x_test, y_test = stack(test_set, train_set)
    return train_set, x_test.to(device), y_test.to(device)
)PY";

const char* const kImageFolderSource =
    R"PY(def source_dataset(data, train, transform):
    """The image folder's train split (train=True) or test split as torchvision's ImageFolder reads
    it (a class per subfolder, every image in RGB), through `transform`."""
    folder = os.path.join(data, TRAIN_FOLDER if train else TEST_FOLDER)
    return torchvision.datasets.ImageFolder(folder, transform=transform)
)PY";

const char* const kMnistSource =
    R"PY(def read_idx(folder, stem):
    """An idx file of bytes (MNIST's format), plain or gzipped, as a numpy array of its shape."""
    for path in (os.path.join(folder, stem), os.path.join(folder, stem + ".gz")):
        if os.path.isfile(path):
            with open(path, "rb") as f:
                data = f.read()
            if data[:2] == b"\x1f\x8b":  # gzip's magic number, whatever the file's name
                data = gzip.decompress(data)
            dims = data[3]
            shape = [int.from_bytes(data[4 + 4 * d:8 + 4 * d], "big") for d in range(dims)]
            return np.frombuffer(data, np.uint8, offset=4 + 4 * dims).reshape(shape)
    raise FileNotFoundError(f"{folder}: no {stem} (plain or .gz)")


class MNISTFiles(Dataset):
    """MNIST or Fashion-MNIST idx files, sample by sample as torchvision's MNIST gives them: a PIL
    image of mode "L" through `transform`, and its class."""

    def __init__(self, folder, train, transform):
        prefix = "train" if train else "t10k"
        self.images = read_idx(folder, prefix + "-images-idx3-ubyte")
        self.labels = read_idx(folder, prefix + "-labels-idx1-ubyte")
        self.transform = transform

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        image = Image.fromarray(self.images[index], mode="L")
        return self.transform(image), int(self.labels[index])


def source_dataset(data, train, transform):
    """The MNIST files' train split (train=True) or test split (t10k), through `transform`."""
    return MNISTFiles(os.path.join(data, FILES), train, transform)
)PY";

const char* const kCifarSource =
    R"PY(class CIFARFiles(Dataset):
    """CIFAR-10 or CIFAR-100 binary batches (records of the label, CIFAR-100's coarse then fine,
    then the red, green and blue 32 x 32 planes), sample by sample as torchvision's CIFAR10 and
    CIFAR100 give them: a PIL image of mode "RGB" through `transform`, and its (fine) class."""

    def __init__(self, folder, train, transform, hundred):
        if hundred:
            names = ["train.bin" if train else "test.bin"]
        else:
            names = [f"data_batch_{b}.bin" for b in range(1, 6)] if train else ["test_batch.bin"]
        labels = 2 if hundred else 1
        records = np.concatenate([
            np.fromfile(os.path.join(folder, name), np.uint8).reshape(-1, labels + 3 * 32 * 32)
            for name in names])
        self.labels = records[:, labels - 1]
        planes = records[:, labels:].reshape(-1, 3, 32, 32)
        self.images = np.ascontiguousarray(planes.transpose(0, 2, 3, 1))  # height, width, RGB
        self.transform = transform

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        return self.transform(Image.fromarray(self.images[index])), int(self.labels[index])


def source_dataset(data, train, transform):
    """The CIFAR batches' train split (train=True) or test split, through `transform`."""
    return CIFARFiles(os.path.join(data, FILES), train, transform, hundred={{HUNDRED}})
)PY";

const char* const kNumpySource =
    R"PY(def numpy_arrays(path, train):
    """x and y as NN Studio finds them: an .npz's x and y (or x_train and y_train; x_test and
    y_test for the test split), or an .npy of inputs and its labels beside it (x.npy and y.npy,
    NAME_x.npy and NAME_y.npy)."""
    if path.lower().endswith(".npy"):
        stem = os.path.splitext(os.path.basename(path))[0]
        labels = "y" if stem in ("x", "X") else stem[:-1] + "y"
        return np.load(path), np.load(os.path.join(os.path.dirname(path), labels + ".npy"))
    arrays = np.load(path)
    if train:
        names = (("x", "x_train", "X", "X_train"), ("y", "y_train", "Y", "Y_train"))
    else:
        names = (("x_test", "X_test"), ("y_test", "Y_test"))
    return tuple(arrays[next(n for n in group if n in arrays.files)] for group in names)


def source_dataset(data, train, transform):
    """The arrays' train split (train=True) or test split as a TensorDataset: x as float32, y as
    class indices (int64) or, when it is floating point, values [N, 1]. Arrays have no
    transforms."""
    x, y = numpy_arrays(data, train)
    x = torch.from_numpy(np.asarray(x, np.float32))
    if np.issubdtype(y.dtype, np.floating):
        return TensorDataset(x, torch.from_numpy(np.asarray(y, np.float32)).reshape(-1, 1))
    return TensorDataset(x, torch.from_numpy(np.asarray(y, np.int64)))
)PY";

}  // namespace nns::exporting
