// Command devicelist asks kubelet's own device-plugin client (1.36) to read a device list served by kubelet's own
// stub plugin over a unix socket, as kubelet reads a device plugin's ListAndWatch reply, and prints what kubelet
// received or the error that ended the stream, as one JSON line.
//
// Usage: devicelist GPUS UNITS_PER_GPU
//
// Each GPU lists one device per unit, named "<GPU UUID>-_-<n>" with the Healthy state, as the open-source gpushare
// device plugin names them; the test compares the outcome with gpushare's account of the reply's size.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	plugin "k8s.io/kubernetes/pkg/kubelet/cm/devicemanager/plugin/v1beta1"
)

type outcome struct {
	Devices  int    `json:"devices"`
	Received int    `json:"received"`
	Error    string `json:"error,omitempty"`
}

type handler struct{ received chan int }

func (h *handler) PluginConnected(context.Context, string, plugin.DevicePlugin) error { return nil }
func (h *handler) PluginDisconnected(klog.Logger, string)                             {}
func (h *handler) PluginListAndWatchReceiver(_ klog.Logger, _ string, r *pluginapi.ListAndWatchResponse) {
	h.received <- len(r.Devices)
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: devicelist GPUS UNITS_PER_GPU")
		os.Exit(2)
	}
	gpus, err1 := strconv.Atoi(os.Args[1])
	units, err2 := strconv.Atoi(os.Args[2])
	if err1 != nil || err2 != nil {
		fmt.Fprintln(os.Stderr, "devicelist: GPUS and UNITS_PER_GPU are whole numbers")
		os.Exit(2)
	}
	var devices []*pluginapi.Device
	for g := 0; g < gpus; g++ {
		uuid := fmt.Sprintf("GPU-%08x-%04x-%04x-%04x-%012x", g, g, g, g, g)
		for n := 0; n < units; n++ {
			devices = append(devices, &pluginapi.Device{ID: fmt.Sprintf("%s-_-%d", uuid, n), Health: pluginapi.Healthy})
		}
	}
	dir, err := os.MkdirTemp("", "devicelist")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	socket := filepath.Join(dir, "plugin.sock")
	quiet := logr.Discard()
	stub := plugin.NewDevicePluginStub(quiet, devices, socket, "aliyun.com/gpu-mem", false, false)
	if err := stub.Start(context.Background()); err != nil {
		panic(err)
	}
	defer func() { _ = stub.Stop(quiet) }()

	ended := make(chan string, 1)
	logger := funcr.New(func(prefix, args string) {
		if len(ended) == 0 {
			ended <- args
		}
	}, funcr.Options{})
	ctx := klog.NewContext(context.Background(), logger)
	h := &handler{received: make(chan int, 1)}
	client := plugin.NewPluginClient("aliyun.com/gpu-mem", socket, h)
	if err := client.Connect(ctx); err != nil {
		panic(err)
	}
	go client.Run(ctx)

	result := outcome{Devices: len(devices)}
	select {
	case n := <-h.received:
		result.Received = n
	case message := <-ended:
		result.Error = message
	case <-time.After(60 * time.Second):
		result.Error = "no reply in 60 s"
	}
	line, _ := json.Marshal(result)
	fmt.Println(string(line))
}
